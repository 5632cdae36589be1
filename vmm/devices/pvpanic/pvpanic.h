// A pvpanic-style panic port (QEMU's ISA pvpanic device, I/O port 0x505): the guest writes bit 0
// (PANICKED) when it panics, and the VMM ends the run with its own outcome, so a crash is told
// apart from a clean reset (exit status 6; docs/security.md #31). Reads return the events the
// device supports. Bit 1 (CRASH_LOADED: a crash kernel takes over) is supported and ignored: the
// guest goes on.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "vmm/bus/callback_device.h"

namespace carapace {

class PvPanic : public CallbackDevice {
 public:
  static constexpr uint64_t kPort = 0x505;
  static constexpr uint8_t kPanicked = 1 << 0;
  static constexpr uint8_t kCrashLoaded = 1 << 1;

  // `on_panic` runs on the vCPU thread that wrote the port.
  explicit PvPanic(std::function<void()> on_panic) : CallbackDevice(std::move(on_panic)) {}

  void read(uint64_t offset, std::span<uint8_t> data) override;
  void write(uint64_t offset, std::span<const uint8_t> data) override;
};

}  // namespace carapace
