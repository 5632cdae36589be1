// FrameLimiter: the rate limiter for one direction of a network device. RateLimiter grants a
// byte *range* (right for entropy or disk I/O); a frame cannot be cut, so this takes a bytes
// bucket and a frames bucket all or nothing. A frame larger than the whole bytes bucket is
// charged the bucket's size, so it still passes once the bucket is full instead of stalling the
// queue forever. Not thread-safe: owned by the device, used under its lock.
#pragma once

#include <algorithm>
#include <cstdint>

#include "common/base/token_bucket.h"

namespace carapace::net {

class FrameLimiter {
 public:
  FrameLimiter(const RateLimiter::Config& config, uint64_t now_ns)
      : bytes_(config.bytes, config.refill_ns, now_ns),
        frames_(config.ops, config.refill_ns, now_ns) {}

  bool unlimited() const { return bytes_.unlimited() && frames_.unlimited(); }

  // Takes one frame and `bytes` bytes if both are available; nothing otherwise.
  bool admit(uint64_t bytes, uint64_t now_ns) {
    if (unlimited()) return true;
    bytes = charge(bytes);
    if (bytes_.available(now_ns) < bytes || frames_.available(now_ns) < 1) return false;
    (void)bytes_.consume(bytes, now_ns);
    (void)frames_.consume(1, now_ns);
    return true;
  }
  // Nanoseconds until admit(bytes) can succeed (0: now).
  uint64_t wait_ns(uint64_t bytes, uint64_t now_ns) {
    return std::max(bytes_.wait_ns(charge(bytes), now_ns), frames_.wait_ns(1, now_ns));
  }

 private:
  uint64_t charge(uint64_t bytes) const {
    return bytes_.unlimited() ? bytes : std::min(bytes, bytes_.size());
  }

  TokenBucket bytes_;
  TokenBucket frames_;
};

}  // namespace carapace::net
