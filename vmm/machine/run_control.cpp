#include "vmm/machine/run_control.h"

namespace carapace {

bool RunControl::finish(VmOutcome outcome, std::string detail) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return false;
    finished_ = true;
    outcome_ = outcome;
    detail_ = std::move(detail);
  }
  cv_.notify_all();
  return true;
}

bool RunControl::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finished_;
}

VmOutcome RunControl::wait(std::optional<std::chrono::nanoseconds> timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (timeout) {
    if (!cv_.wait_for(lock, *timeout, [this] { return finished_; })) {
      finished_ = true;
      outcome_ = VmOutcome::kTimeout;
      detail_ = "timeout expired";
    }
  } else {
    cv_.wait(lock, [this] { return finished_; });
  }
  return outcome_;
}

VmOutcome RunControl::outcome() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outcome_;
}

std::string RunControl::detail() const {
  std::lock_guard<std::mutex> lock(mu_);
  return detail_;
}

}  // namespace carapace
