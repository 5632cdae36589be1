#include "common/base/token_bucket.h"

#include <time.h>

#include <algorithm>

namespace carapace {

TokenBucket::TokenBucket(uint64_t size, uint64_t refill_ns, uint64_t now_ns)
    : size_(refill_ns == 0 ? 0 : size), refill_ns_(refill_ns), tokens_(size_), last_ns_(now_ns) {}

void TokenBucket::refill(uint64_t now_ns) {
  if (unlimited() || now_ns <= last_ns_) return;
  if (tokens_ >= size_) {
    last_ns_ = now_ns;
    return;
  }
  // 128-bit: elapsed * size can exceed 2^64 for long idle times or big buckets.
  const unsigned __int128 elapsed = now_ns - last_ns_;
  const unsigned __int128 add = elapsed * size_ / refill_ns_;
  if (add == 0) return;  // keep last_ns_ so fractions of a token accumulate
  if (add >= size_ - tokens_) {
    tokens_ = size_;
    last_ns_ = now_ns;
    return;
  }
  tokens_ += static_cast<uint64_t>(add);
  // Account only the time that produced whole tokens.
  last_ns_ += static_cast<uint64_t>(add * refill_ns_ / size_);
}

uint64_t TokenBucket::available(uint64_t now_ns) {
  if (unlimited()) return UINT64_MAX;
  refill(now_ns);
  return tokens_;
}

bool TokenBucket::consume(uint64_t n, uint64_t now_ns) {
  if (unlimited()) return true;
  refill(now_ns);
  if (n > tokens_) return false;
  tokens_ -= n;
  return true;
}

uint64_t TokenBucket::wait_ns(uint64_t n, uint64_t now_ns) {
  if (unlimited()) return 0;
  n = std::min(n, size_);
  refill(now_ns);
  if (tokens_ >= n) return 0;
  const unsigned __int128 deficit = n - tokens_;
  // Round up, so waiting that long always suffices.
  const unsigned __int128 ns = (deficit * refill_ns_ + size_ - 1) / size_;
  return ns > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(ns);
}

RateLimiter::RateLimiter(const Config& config, uint64_t now_ns)
    : bytes_(config.bytes, config.refill_ns, now_ns), ops_(config.ops, config.refill_ns, now_ns) {}

uint64_t RateLimiter::grant(uint64_t wanted, uint64_t now_ns) {
  if (wanted == 0) return 0;
  const uint64_t bytes = std::min(wanted, bytes_.available(now_ns));
  if (bytes == 0 || ops_.available(now_ns) == 0) return 0;
  ops_.consume(1, now_ns);
  bytes_.consume(bytes, now_ns);
  return bytes;
}

uint64_t RateLimiter::wait_ns(uint64_t bytes, uint64_t now_ns) {
  return std::max(bytes_.wait_ns(std::max<uint64_t>(bytes, 1), now_ns), ops_.wait_ns(1, now_ns));
}

uint64_t RateLimiter::now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace carapace
