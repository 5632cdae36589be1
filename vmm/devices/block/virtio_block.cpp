// VirtioBlock lifecycle: creation, features and configuration space, activation, reset, the
// event-loop handlers and the rate limiter. Request handling is in block_io.cpp.
#include "vmm/devices/block/virtio_block.h"

#include <sys/epoll.h>

#include <algorithm>
#include <cstring>

#include "common/base/log.h"
#include "vmm/event/timer_fd.h"

namespace carapace {

using block::DiskImage;

namespace {

uint64_t block_features(const DiskImage& image) {
  // virtio 1.2 §5.2.3. SEG_MAX: the driver may use up to queue size - 2 data segments (header
  // and status take the other two). No SIZE_MAX: any segment size is fine. FLUSH: writes land
  // in the host page cache, so the guest must be told to flush (virtio 1.2 §5.2.6.4).
  uint64_t f = (1ull << VIRTIO_BLK_F_SEG_MAX) | (1ull << VIRTIO_BLK_F_FLUSH);
  if (image.read_only()) f |= 1ull << VIRTIO_BLK_F_RO;
  if (image.supports_discard())
    f |= (1ull << VIRTIO_BLK_F_DISCARD) | (1ull << VIRTIO_BLK_F_WRITE_ZEROES);
  return f;
}

}  // namespace

Result<std::shared_ptr<VirtioBlock>> VirtioBlock::create(std::unique_ptr<DiskImage> image,
                                                         const std::string& serial,
                                                         const RateLimiter::Config& limit,
                                                         BlockBackend backend) {
  if (!image) return make_error("virtio-blk: no disk image");
  UniqueFd timer = TRY(create_timer_fd("virtio-blk"));
  std::unique_ptr<block::UringEngine> engine;
  // Overlays have no direct fd: their copy-on-write logic runs synchronously.
  if (backend != BlockBackend::kSync && image->direct_fd() >= 0) {
    auto e = block::UringEngine::create(kQueueSize);
    if (e.ok()) {
      engine = std::move(e).value();
    } else if (backend == BlockBackend::kIoUring) {
      return e.take_error();
    } else {
      LOG_INFO("virtio-blk: %s; using synchronous I/O", e.error().describe().c_str());
    }
  }
  return std::shared_ptr<VirtioBlock>(
      new VirtioBlock(std::move(image), serial, limit, std::move(timer), std::move(engine)));
}

VirtioBlock::VirtioBlock(std::unique_ptr<DiskImage> image, const std::string& serial,
                         const RateLimiter::Config& limit, UniqueFd timer,
                         std::unique_ptr<block::UringEngine> engine)
    : DeviceBase({.type = virtio::DeviceType::kBlock,
                  .name = "virtio-blk",
                  .queue_max_sizes = kQueueMaxSizes,
                  .features = block_features(*image),
                  .state_version = kStateVersion}),
      limit_config_(limit),
      image_(std::move(image)),
      ops_bucket_(limit.ops, limit.refill_ns, RateLimiter::now_ns()),
      bytes_bucket_(limit.bytes, limit.refill_ns, RateLimiter::now_ns()),
      timer_(std::move(timer)),
      engine_(std::move(engine)) {
  limits_.capacity_sectors = image_->capacity_sectors();
  limits_.read_only = image_->read_only();
  limits_.discard = image_->supports_discard();
  limits_.max_discard_sectors = kMaxDiscardSectors;
  limits_.max_write_zeroes_sectors = kMaxWriteZeroesSectors;

  // virtio 1.2 §5.2.4; fields of features we do not offer stay zero.
  config_.capacity = image_->capacity_sectors();
  config_.seg_max = kQueueSize - 2;
  if (limits_.discard) {
    config_.max_discard_sectors = kMaxDiscardSectors;
    config_.max_discard_seg = 1;
    config_.discard_sector_alignment = 4096 / block::kSectorSize;  // file-system block
    config_.max_write_zeroes_sectors = kMaxWriteZeroesSectors;
    config_.max_write_zeroes_seg = 1;
    config_.write_zeroes_may_unmap = 1;  // write zeroes punches holes
  }
  // GET_ID: up to 20 bytes, zero-padded, no terminator when all 20 are used (virtio 1.2 §5.2.6).
  std::memcpy(serial_.data(), serial.data(), std::min(serial.size(), serial_.size()));

  if (engine_) {
    slots_.resize(kQueueSize);
    for (uint16_t i = kQueueSize; i > 0; --i)
      free_slots_.push_back(static_cast<uint16_t>(i - 1));
  }
  LOG_INFO("virtio-blk: %s, %llu sectors, %s", image_->describe().c_str(),
           static_cast<unsigned long long>(limits_.capacity_sectors),
           engine_ ? "io_uring" : "synchronous I/O");
}

VirtioBlock::~VirtioBlock() {
  std::lock_guard<std::mutex> lock(mu_);
  drain_locked();
}

void VirtioBlock::read_config(uint64_t offset, std::span<uint8_t> data) const {
  virtio::read_config_struct(config_, offset, data);
}

Status VirtioBlock::activate(virtio::ActivationContext ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ctx.queues.size() != 1) return make_error("virtio-blk: expects one queue");
  if (ctx.loop != nullptr) {
    loop_ = ctx.loop;
    auto s = register_fds_locked(*ctx.loop);
    if (!s.ok()) {
      unregister_fds_locked();
      return s;
    }
  }
  // A fresh bucket per activation: a guest cannot bank tokens across resets.
  const uint64_t now = RateLimiter::now_ns();
  ops_bucket_ = TokenBucket(limit_config_.ops, limit_config_.refill_ns, now);
  bytes_bucket_ = TokenBucket(limit_config_.bytes, limit_config_.refill_ns, now);
  ctx_ = std::move(ctx);
  broken_ = throttled_ = false;
  return {};
}

Status VirtioBlock::register_fds_locked(EventLoop& loop) {
  // Handlers hold the device weakly: one that fires while the device is being destroyed finds
  // nothing to do.
  std::weak_ptr<VirtioBlock> weak = weak_from_this();
  if (engine_) {
    TRY_STATUS(loop.add(engine_->event_fd(), EPOLLIN, [weak](uint32_t) {
      if (auto self = weak.lock()) self->on_engine_event();
    }));
    engine_registered_ = true;
  }
  if (limit_config_.ops != 0 || limit_config_.bytes != 0) {
    TRY_STATUS(loop.add(timer_.get(), EPOLLIN, [weak](uint32_t) {
      if (auto self = weak.lock()) self->on_timer();
    }));
    timer_registered_ = true;
  }
  return {};
}

void VirtioBlock::unregister_fds_locked() {
  if (loop_ != nullptr) {
    if (engine_registered_ && engine_) (void)loop_->remove(engine_->event_fd());
    if (timer_registered_) (void)loop_->remove(timer_.get());
  }
  engine_registered_ = timer_registered_ = false;
  loop_ = nullptr;
}

void VirtioBlock::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  // First wait for the kernel to finish with every in-flight buffer; only then forget them.
  drain_locked();
  unregister_fds_locked();
  arm_timer(0);
  ctx_.reset();
  broken_ = throttled_ = false;
}

void VirtioBlock::drain_locked() {
  if (!engine_) return;
  // Completions of a reset queue are dropped: the driver has forgotten these requests, and the
  // used ring must not be written (virtio 1.2 §2.4).
  const bool drained = engine_->drain([](uint64_t, int32_t) {}, 5000);
  if (!drained) {
    // The kernel still owns some buffers. Leak the ring and the slots it points into rather than
    // free them under it, and carry on synchronously.
    LOG_ERROR("virtio-blk: io_uring requests did not finish; switching to synchronous I/O");
    if (engine_registered_ && loop_ != nullptr) (void)loop_->remove(engine_->event_fd());
    engine_registered_ = false;
    (void)engine_.release();
    (void)new std::vector<Slot>(std::move(slots_));
    slots_.clear();
    free_slots_.clear();
    return;
  }
  for (uint16_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].chain) release_slot_locked(i);
}

void VirtioBlock::queue_notify(uint16_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index != 0) return;
  run_locked();
}

void VirtioBlock::on_engine_event() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!engine_) return;
  uint64_t value;
  (void)!::read(engine_->event_fd(), &value, sizeof value);  // non-blocking; clears the count
  engine_->reap([this](uint64_t tag, int32_t res) { on_completion_locked(tag, res); });
  process_locked();
}

void VirtioBlock::on_timer() {
  uint64_t expirations;
  (void)!::read(timer_.get(), &expirations, sizeof expirations);
  std::lock_guard<std::mutex> lock(mu_);
  run_locked();
}

void VirtioBlock::arm_timer(uint64_t ns) {
  // ns == 0 disarms.
  if (!arm_timer_fd(timer_.get(), ns).ok()) LOG_WARN("virtio-blk: timerfd_settime failed");
}

bool VirtioBlock::admit_locked(uint64_t bytes) {
  // One operation and the request's bytes, all or nothing. A request larger than the bucket
  // takes a full bucket, so it waits at most one refill period instead of forever.
  if (ops_bucket_.unlimited() && bytes_bucket_.unlimited()) return true;
  const uint64_t now = RateLimiter::now_ns();
  if (!bytes_bucket_.unlimited()) bytes = std::min(bytes, bytes_bucket_.size());
  if (ops_bucket_.available(now) < 1 || bytes_bucket_.available(now) < bytes) return false;
  (void)ops_bucket_.consume(1, now);
  (void)bytes_bucket_.consume(bytes, now);
  return true;
}

void VirtioBlock::throttle_locked(uint64_t bytes) {
  if (!throttled_) stats_.throttled.fetch_add(1, std::memory_order_relaxed);
  throttled_ = true;
  if (!timer_registered_) return;  // no event loop: the next notify retries
  const uint64_t now = RateLimiter::now_ns();
  const uint64_t wait = std::max(bytes_bucket_.wait_ns(bytes, now), ops_bucket_.wait_ns(1, now));
  // Round a due-now wait up to 1 ns: 0 would disarm the timer.
  arm_timer(std::max<uint64_t>(1, wait));
}

bool VirtioBlock::throttled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return throttled_;
}

bool VirtioBlock::using_io_uring() const {
  std::lock_guard<std::mutex> lock(mu_);
  return engine_ != nullptr;
}

void VirtioBlock::set_reap_on_submit(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  reap_on_submit_ = on;
}

size_t VirtioBlock::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_.size() - free_slots_.size();
}

BlockCounters VirtioBlock::counters() const {
  BlockCounters c;
  c.requests = stats_.requests.load(std::memory_order_relaxed);
  c.read_bytes = stats_.read_bytes.load(std::memory_order_relaxed);
  c.write_bytes = stats_.write_bytes.load(std::memory_order_relaxed);
  c.flushes = stats_.flushes.load(std::memory_order_relaxed);
  c.errors = stats_.errors.load(std::memory_order_relaxed);
  c.io_errors = stats_.io_errors.load(std::memory_order_relaxed);
  c.throttled = stats_.throttled.load(std::memory_order_relaxed);
  return c;
}

}  // namespace carapace
