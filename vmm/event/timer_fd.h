// The one-shot timers devices register in the event loop to resume throttled work: a
// CLOCK_MONOTONIC timerfd (timerfd_create(2)), non-blocking and close-on-exec.
#pragma once

#include <cstdint>
#include <string>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace carapace {

// A disarmed timer; a failure is "WHO: timerfd_create" with errno.
Result<UniqueFd> create_timer_fd(const std::string& who);
// Fires once, `ns` from now; 0 disarms it (a zero it_value does, timerfd_settime(2)).
Status arm_timer_fd(int fd, uint64_t ns);

}  // namespace carapace
