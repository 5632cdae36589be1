// The part of the i8042 keyboard controller a microVM needs: the CPU reset line. Writing 0xFE to
// the command port (0x64) pulses reset, which Linux uses for `reboot=k` and the test guest for
// ending its run; the VMM turns it into a clean exit.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "vmm/bus/callback_device.h"

namespace carapace {

class I8042 : public CallbackDevice {
 public:
  static constexpr uint64_t kDataPort = 0x60;
  static constexpr uint64_t kCommandPort = 0x64;
  static constexpr uint8_t kCmdResetCpu = 0xfe;

  // `on_reset` runs on the vCPU thread that wrote the command.
  explicit I8042(std::function<void()> on_reset) : CallbackDevice(std::move(on_reset)) {}

  // The device spans 0x60..0x64; offset 0 is data, offset 4 the command/status port.
  void read(uint64_t offset, std::span<uint8_t> data) override;
  void write(uint64_t offset, std::span<const uint8_t> data) override;
};

}  // namespace carapace
