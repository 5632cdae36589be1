#include "vmm/devices/net/net_device.h"

#include <sys/epoll.h>

#include <cstring>

#include "common/base/log.h"
#include "vmm/event/timer_fd.h"

namespace carapace::net {

namespace {

template <typename Config>
Config make_config_space(const std::array<uint8_t, 6>& mac) {
  Config c{};
  std::memcpy(c.mac, mac.data(), 6);
  c.status = kStatusLinkUp;
  return c;
}

}  // namespace

Result<std::shared_ptr<NetDevice>> NetDevice::create(const NetDeviceConfig& config,
                                                     std::unique_ptr<NetBackend> backend) {
  if (!backend) return make_error("virtio-net: no backend");
  UniqueFd timer = TRY(create_timer_fd("virtio-net"));
  return std::shared_ptr<NetDevice>(new NetDevice(config, std::move(backend), std::move(timer)));
}

NetDevice::NetDevice(const NetDeviceConfig& config, std::unique_ptr<NetBackend> backend,
                     UniqueFd timer)
    : DeviceBase({.type = virtio::DeviceType::kNet,
                  .name = "virtio-net",
                  .queue_max_sizes = kQueueMaxSizes,
                  .features = kFeatures,
                  .state_version = 1}),
      config_(make_config_space<ConfigSpace>(config.mac)),
      egress_policy_(config.egress_policy),
      allow_(config.allow),
      rx_limit_config_(config.rx_limit),
      tx_limit_config_(config.tx_limit),
      backend_(std::move(backend)),
      timer_(std::move(timer)),
      rx_limiter_(config.rx_limit, RateLimiter::now_ns()),
      tx_limiter_(config.tx_limit, RateLimiter::now_ns()),
      rx_frame_(kMaxFrameLen + 1),
      tx_frame_(kMaxFrameLen) {
  static_assert(offsetof(ConfigSpace, status) == kConfigStatusOffset);
}

NetDevice::~NetDevice() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_events_locked();
}

void NetDevice::read_config(uint64_t offset, std::span<uint8_t> data) const {
  virtio::read_config_struct(config_, offset, data);
}

std::array<uint8_t, 6> NetDevice::mac() const {
  std::array<uint8_t, 6> m;
  std::memcpy(m.data(), config_.mac, 6);
  return m;
}

bool NetDevice::rx_waiting_for_buffers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rx_waiting_;
}

bool NetDevice::rx_armed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return (backend_events_ & EPOLLIN) != 0;
}

bool NetDevice::tx_waiting_for_backend() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tx_held_ != 0;
}

Status NetDevice::activate(virtio::ActivationContext ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ctx.queues.size() != 2) return make_error("virtio-net: expects two queues");
  stop_events_locked();  // a second DRIVER_OK without a reset starts clean
  ctx_ = std::move(ctx);
  loop_ = ctx_->loop;
  if (loop_ != nullptr) {
    std::weak_ptr<NetDevice> weak = weak_from_this();
    auto added = loop_->add(timer_.get(), EPOLLIN, [weak](uint32_t) {
      if (auto self = weak.lock()) self->on_timer();
    });
    if (!added.ok()) {
      ctx_.reset();
      loop_ = nullptr;
      return added.take_error();
    }
    timer_registered_ = true;
  }
  // Fresh buckets per activation: a guest cannot bank tokens across resets.
  const uint64_t now = RateLimiter::now_ns();
  rx_limiter_ = FrameLimiter(rx_limit_config_, now);
  tx_limiter_ = FrameLimiter(tx_limit_config_, now);
  rx_waiting_ = rx_throttled_ = tx_throttled_ = broken_ = false;
  // Starts reading the backend (and so arms it), and serves anything already queued.
  process_tx_locked();
  process_rx_locked();
  return {};
}

void NetDevice::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_events_locked();
  ctx_.reset();
  if (rx_pending_ != 0) bump(counters_.rx_dropped_reset);
  rx_pending_ = 0;
  if (tx_held_ != 0) bump(counters_.tx_dropped_reset);
  tx_held_ = 0;
  rx_waiting_ = rx_throttled_ = tx_throttled_ = broken_ = false;
}

void NetDevice::queue_notify(uint16_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!ctx_) return;
  // A notify retries a throttled queue at once: the limiter re-checks and, still empty, re-arms
  // the timer. Cheap, and without an event loop (tests) it is the only way to resume.
  if (index == kRxQueue) {
    rx_waiting_ = rx_throttled_ = false;  // new buffers, or worth a look
    process_rx_locked();
  } else if (index == kTxQueue) {
    tx_throttled_ = false;
    process_tx_locked();
  }
}

void NetDevice::on_backend_event(uint32_t events) {
  std::lock_guard<std::mutex> lock(mu_);
  constexpr uint32_t kTrouble = EPOLLERR | EPOLLHUP;  // the next send/receive reports it
  if ((backend_events_ & EPOLLOUT) && (events & (EPOLLOUT | kTrouble))) process_tx_locked();
  if ((backend_events_ & EPOLLIN) && (events & (EPOLLIN | kTrouble))) {
    bump(counters_.backend_wakeups);
    process_rx_locked();
  }
}

void NetDevice::on_timer() {
  uint64_t expirations;
  (void)!::read(timer_.get(), &expirations, sizeof expirations);
  std::lock_guard<std::mutex> lock(mu_);
  timer_deadline_ns_ = 0;
  rx_throttled_ = tx_throttled_ = false;
  process_tx_locked();
  process_rx_locked();
}

void NetDevice::arm_rx_locked() {
  set_backend_events_locked(backend_events_ | EPOLLIN);
}

void NetDevice::disarm_rx_locked() {
  set_backend_events_locked(backend_events_ & ~uint32_t{EPOLLIN});
}

void NetDevice::set_backend_events_locked(uint32_t events) {
  if (loop_ == nullptr) events = 0;  // tests without a loop resume from notifies
  if (events == backend_events_) return;
  if (backend_events_ != 0) (void)loop_->remove(backend_->fd());
  backend_events_ = 0;
  if (events == 0) return;
  std::weak_ptr<NetDevice> weak = weak_from_this();
  auto added = loop_->add(backend_->fd(), events, [weak](uint32_t ev) {
    if (auto self = weak.lock()) self->on_backend_event(ev);
  });
  if (!added.ok()) {
    warn_locked("cannot watch the backend", added.error());
    return;
  }
  backend_events_ = events;
}

void NetDevice::schedule_timer_locked(uint64_t ns) {
  if (!timer_registered_) return;
  ns = std::max<uint64_t>(ns, 1);  // a zero it_value would disarm the timer
  const uint64_t deadline = RateLimiter::now_ns() + ns;
  // One timer serves both directions: keep the earlier deadline; the handler re-arms for the
  // other one if it is still throttled.
  if (timer_deadline_ns_ != 0 && timer_deadline_ns_ <= deadline) return;
  if (Status armed = arm_timer_fd(timer_.get(), ns); !armed.ok()) {
    warn_locked("timerfd_settime", armed.error());
    return;
  }
  timer_deadline_ns_ = deadline;
}

void NetDevice::stop_events_locked() {
  set_backend_events_locked(0);
  if (timer_registered_ && loop_ != nullptr) (void)loop_->remove(timer_.get());
  timer_registered_ = false;
  (void)arm_timer_fd(timer_.get(), 0);
  timer_deadline_ns_ = 0;
  loop_ = nullptr;
}

void NetDevice::go_broken_locked(const Error& why) {
  broken_ = true;
  set_backend_events_locked(0);  // a writable fd would wake a device that does nothing
  ctx_->signals->report_needs_reset(why);
}

void NetDevice::warn_locked(const char* what, const Error& e) {
  if (warnings_left_ == 0) return;
  --warnings_left_;
  LOG_WARN("virtio-net (%s): %s: %s%s", backend_->describe(), what, e.describe().c_str(),
           warnings_left_ == 0 ? " (further warnings suppressed)" : "");
}

}  // namespace carapace::net
