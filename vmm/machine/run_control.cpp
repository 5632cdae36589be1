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
  return finished_.load(std::memory_order_acquire);
}

void RunControl::request_pause() {
  pause_requested_.store(true, std::memory_order_release);
}

bool RunControl::wait_paused(size_t vcpus) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return finished_ || parked_ >= vcpus; });
  return !finished_;
}

void RunControl::resume() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pause_requested_.store(false, std::memory_order_release);
  }
  cv_.notify_all();
}

void RunControl::park() {
  std::unique_lock<std::mutex> lock(mu_);
  ++parked_;
  cv_.notify_all();
  cv_.wait(lock, [this] { return finished_ || !pause_requested_; });
  --parked_;
}

VmOutcome RunControl::wait(std::optional<std::chrono::nanoseconds> timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (timeout) {
    if (!cv_.wait_for(lock, *timeout, [this] { return finished_.load(); })) {
      finished_ = true;
      outcome_ = VmOutcome::kTimeout;
      detail_ = "timeout expired";
      // Parked vCPUs (a paused VM) wait on the same condition for the end: wake them, or the
      // caller's join of their threads never returns.
      cv_.notify_all();
    }
  } else {
    cv_.wait(lock, [this] { return finished_.load(); });
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
