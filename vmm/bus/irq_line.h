// IrqLine: how a device raises its interrupt, without knowing about the Vm (tests use a fake).
#pragma once

#include <cstdint>

namespace carapace {

class IrqLine {
 public:
  virtual ~IrqLine() = default;
  // Drives the line high or low; an edge-triggered pin sees the rising edge.
  virtual void set_level(bool high) = 0;
};

}  // namespace carapace
