#include "vmm/devices/rng/rng.h"

#include <sys/epoll.h>
#include <sys/random.h>

#include <algorithm>
#include <array>

#include "common/base/log.h"
#include "vmm/event/timer_fd.h"

namespace carapace {

using virtio::ActivationContext;

Result<std::shared_ptr<VirtioRng>> VirtioRng::create(const RateLimiter::Config& limit) {
  UniqueFd timer = TRY(create_timer_fd("virtio-rng"));
  return std::shared_ptr<VirtioRng>(new VirtioRng(limit, std::move(timer)));
}

Status VirtioRng::activate(ActivationContext ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ctx.queues.size() != 1) return make_error("virtio-rng: expects one queue");
  if (ctx.loop != nullptr && !limiter_.unlimited()) {
    TRY_STATUS(ctx.loop->add(timer_.get(), EPOLLIN, [this](uint32_t) { on_timer(); }));
    timer_registered_ = true;
  }
  // A fresh bucket per activation: a guest cannot bank tokens across resets.
  limiter_ = RateLimiter(limit_config_, RateLimiter::now_ns());
  ctx_ = std::move(ctx);
  throttled_ = broken_ = false;
  return {};
}

void VirtioRng::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  if (timer_registered_ && ctx_ && ctx_->loop) (void)ctx_->loop->remove(timer_.get());
  timer_registered_ = false;
  arm_timer(0);  // disarm
  ctx_.reset();
  throttled_ = broken_ = false;
}

void VirtioRng::queue_notify(uint16_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index != 0) return;
  throttled_ = false;  // try again; still throttled re-arms the timer
  process_locked();
}

void VirtioRng::on_timer() {
  uint64_t expirations;
  (void)!::read(timer_.get(), &expirations, sizeof expirations);
  std::lock_guard<std::mutex> lock(mu_);
  throttled_ = false;
  process_locked();
}

void VirtioRng::arm_timer(uint64_t ns) {
  // ns == 0 disarms.
  if (!arm_timer_fd(timer_.get(), ns).ok()) LOG_WARN("virtio-rng: timerfd_settime failed");
}

void VirtioRng::process_locked() {
  if (!ctx_ || broken_) return;
  virtio::Queue& q = ctx_->queues[0];
  std::array<uint8_t, 4096> buf;
  do {
    for (;;) {
      auto next = q.pop();
      if (!next.ok()) {  // a corrupt ring: stop until the driver resets us
        broken_ = true;
        ctx_->signals->report_needs_reset(next.error());
        return;
      }
      if (!next->has_value()) break;
      virtio::DescriptorChain& chain = **next;
      auto writer = chain.writer();
      if (writer.available() == 0) {  // nothing to fill: complete it empty
        ctx_->errors->bad_request.fetch_add(1, std::memory_order_relaxed);
        (void)q.add_used(chain.head(), 0);
        continue;
      }
      const uint64_t wanted = std::min<uint64_t>(writer.available(), kMaxRequestBytes);
      const uint64_t granted = limiter_.grant(wanted, RateLimiter::now_ns());
      if (granted == 0) {  // throttled: hand the chain back and retry when tokens refill
        q.undo_pop();
        throttled_ = true;
        // Round a due-now wait up to 1 ns: 0 would disarm the timer.
        if (timer_registered_)
          arm_timer(std::max<uint64_t>(1, limiter_.wait_ns(wanted, RateLimiter::now_ns())));
        break;
      }
      uint64_t done = 0;
      while (done < granted) {
        const size_t chunk = std::min<uint64_t>(granted - done, buf.size());
        const ssize_t n = ::getrandom(buf.data(), chunk, 0);
        if (n <= 0) {
          if (n < 0 && errno == EINTR) continue;
          LOG_WARN("virtio-rng: getrandom failed");
          break;
        }
        if (!writer.write({buf.data(), static_cast<size_t>(n)}).ok()) break;
        done += static_cast<uint64_t>(n);
      }
      bytes_served_ += done;
      (void)q.add_used(chain.head(), static_cast<uint32_t>(done));
    }
    if (throttled_) break;
  } while (q.enable_notification());
  if (q.needs_notification()) ctx_->signals->signal_used(0);
}

uint64_t VirtioRng::bytes_served() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_served_;
}

bool VirtioRng::throttled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return throttled_;
}

}  // namespace carapace
