// RunControl: how vCPU threads and the controlling threads agree on the end of a run, and on
// pausing it. The first outcome reported wins; later ones (other vCPUs being kicked out) are
// ignored. Pausing: a controller requests it and kicks the vCPUs out of KVM_RUN; each vCPU thread
// parks at a clean point (after KVM has completed any pending I/O) until resumed or finished.
#pragma once

#include <atomic>
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

  // Controller side of pausing. wait_paused() returns true once `vcpus` threads are parked, false
  // if the run finished first.
  void request_pause();
  bool wait_paused(size_t vcpus);
  void resume();
  // vCPU side: a cheap check on every exit, and the parking itself.
  bool pause_requested() const { return pause_requested_.load(std::memory_order_acquire); }
  void park();

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> finished_{false};
  std::atomic<bool> pause_requested_{false};
  size_t parked_ = 0;
  VmOutcome outcome_ = VmOutcome::kGuestReset;
  std::string detail_;
};

}  // namespace carapace
