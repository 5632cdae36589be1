// TokenBucket and RateLimiter: cap how fast a guest can take a host resource (entropy, disk
// bandwidth, network packets). A bucket holds at most `size` tokens and refills continuously at
// `size` tokens per `refill_ns`. Time is passed in (nanoseconds, CLOCK_MONOTONIC in the VMM), so
// the arithmetic is testable without sleeping. Not thread-safe: owned by one device.
#pragma once

#include <cstdint>

namespace carapace {

class TokenBucket {
 public:
  // size == 0 (or refill_ns == 0) means unlimited. A new bucket starts full.
  TokenBucket(uint64_t size, uint64_t refill_ns, uint64_t now_ns);

  bool unlimited() const { return size_ == 0; }
  uint64_t size() const { return size_; }
  // Tokens available at `now_ns` (UINT64_MAX when unlimited).
  uint64_t available(uint64_t now_ns);
  // Takes `n` tokens if that many are available; all or nothing.
  bool consume(uint64_t n, uint64_t now_ns);
  // Nanoseconds until `n` tokens are available (0 if now). `n` is capped at size().
  uint64_t wait_ns(uint64_t n, uint64_t now_ns);

 private:
  void refill(uint64_t now_ns);

  uint64_t size_;
  uint64_t refill_ns_;
  uint64_t tokens_;
  uint64_t last_ns_;  // time up to which refills are accounted
};

// A bytes bucket and an operations bucket, as Firecracker's rate limiter: a request needs one op
// and some bytes, and may be granted fewer bytes than it asked for.
class RateLimiter {
 public:
  struct Config {
    uint64_t bytes = 0;               // per refill period; 0: unlimited
    uint64_t ops = 0;                 // per refill period; 0: unlimited
    uint64_t refill_ns = 1000000000;  // the refill period
  };

  RateLimiter(const Config& config, uint64_t now_ns);

  bool unlimited() const { return bytes_.unlimited() && ops_.unlimited(); }
  // Grants up to `wanted` bytes and one op; 0 when throttled (nothing consumed then).
  uint64_t grant(uint64_t wanted, uint64_t now_ns);
  // Nanoseconds until grant() can return `bytes` (capped at the bucket size) for one op.
  uint64_t wait_ns(uint64_t bytes, uint64_t now_ns);

  // CLOCK_MONOTONIC in nanoseconds.
  static uint64_t now_ns();

 private:
  TokenBucket bytes_;
  TokenBucket ops_;
};

}  // namespace carapace
