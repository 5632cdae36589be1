// A port device whose one effect on the machine is a callback the VMM gives it: the i8042's CPU
// reset line and the pvpanic port end the run through it. The callback runs on the vCPU thread
// that wrote the port.
#pragma once

#include <functional>
#include <utility>

#include "vmm/bus/bus.h"

namespace carapace {

class CallbackDevice : public BusDevice {
 protected:
  explicit CallbackDevice(std::function<void()> callback) : callback_(std::move(callback)) {}
  void fire() { callback_(); }

 private:
  std::function<void()> callback_;
};

}  // namespace carapace
