// virtio-rng (virtio 1.2 §5.4): one request queue; the device fills each request's writable
// buffers with bytes from getrandom(2) and completes it with the number written. A RateLimiter
// (bytes and requests per period) caps how fast a guest can drain host entropy; a throttled
// request waits on a timerfd in the event loop and resumes when tokens refill.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>

#include "common/base/token_bucket.h"
#include "common/base/unique_fd.h"
#include "vmm/virtio/device_base.h"

namespace carapace {

class VirtioRng : public virtio::DeviceBase {
 public:
  static constexpr uint16_t kQueueSize = 256;
  // At most this many bytes per request: one getrandom-sized bite keeps the loop responsive.
  static constexpr uint32_t kMaxRequestBytes = 64 * 1024;

  static Result<std::shared_ptr<VirtioRng>> create(const RateLimiter::Config& limit = {});

  // virtio 1.2 §5.4.4: no configuration space; reads stay zero.
  void read_config(uint64_t, std::span<uint8_t>) const override {}

  Status activate(virtio::ActivationContext ctx) override;
  void reset() override;
  void queue_notify(uint16_t index) override;
  // Snapshot (DeviceBase, state version 1): no device state beyond the queues; the rate limiter
  // starts afresh on restore.

  uint64_t bytes_served() const;
  bool throttled() const;

 private:
  static constexpr uint16_t kQueueMaxSizes[] = {kQueueSize};

  VirtioRng(const RateLimiter::Config& limit, UniqueFd timer)
      : DeviceBase({.type = virtio::DeviceType::kRng,
                    .name = "virtio-rng",
                    .queue_max_sizes = kQueueMaxSizes,
                    .features = 0,  // virtio 1.2 §5.4.3: none
                    .state_version = 1}),
        limit_config_(limit),
        limiter_(limit, RateLimiter::now_ns()),
        timer_(std::move(timer)) {}

  void process_locked();
  void on_timer();
  void arm_timer(uint64_t ns);

  const RateLimiter::Config limit_config_;
  RateLimiter limiter_;
  UniqueFd timer_;  // timerfd: resumes throttled work
  bool timer_registered_ = false;
  bool throttled_ = false;
  bool broken_ = false;  // NEEDS_RESET reported; wait for reset
  uint64_t bytes_served_ = 0;
};

}  // namespace carapace
