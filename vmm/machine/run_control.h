// RunControl: how vCPU threads and the main thread agree on the end of a run. The first outcome
// reported wins; later ones (other vCPUs being kicked out) are ignored.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>

#include "vmm/machine/exit_status.h"

namespace carapace {

class RunControl {
 public:
  // Records the outcome if none was recorded yet; returns whether this call decided it.
  bool finish(VmOutcome outcome, std::string detail);
  bool finished() const;

  // Blocks until some thread calls finish(), or the timeout expires (then records kTimeout).
  VmOutcome wait(std::optional<std::chrono::nanoseconds> timeout);

  VmOutcome outcome() const;
  std::string detail() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
  VmOutcome outcome_ = VmOutcome::kGuestReset;
  std::string detail_;
};

}  // namespace carapace
