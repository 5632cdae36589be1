// PhaseTimer: logs how long each step of a sequence took (at debug level), so start-up costs can
// be attributed without a profiler: `carapace run --log-level debug`.
#pragma once

#include <chrono>

#include "common/base/log.h"

namespace carapace {

class PhaseTimer {
 public:
  explicit PhaseTimer(const char* what) : what_(what), start_(Clock::now()), last_(start_) {}

  // Logs the time since the previous mark (and since the start).
  void mark(const char* phase) {
    if (log_level() < LogLevel::kDebug) return;
    auto now = Clock::now();
    LOG_DEBUG("%s: %-22s %8.3f ms (total %8.3f ms)", what_, phase, ms(now - last_),
              ms(now - start_));
    last_ = now;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static double ms(Clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
  }

  const char* what_;
  Clock::time_point start_, last_;
};

}  // namespace carapace
