#include "vmm/virtio/mmio_transport.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "common/base/log.h"
#include "vmm/virtio/ring_layout.h"

namespace carapace::virtio {

namespace {

// Features the core implements for every device.
constexpr uint64_t kTransportFeatures = kFVersion1 | kFIndirectDesc | kFEventIdx;

}  // namespace

Result<std::shared_ptr<MmioTransport>> MmioTransport::create(std::shared_ptr<VirtioDevice> device,
                                                             const GuestMemory& mem, Interrupt* irq,
                                                             EventLoop* loop, uint64_t mmio_base) {
  if (!device) return make_error("virtio-mmio: no device");
  for (uint16_t max : device->queue_max_sizes())
    if (max == 0 || (max & (max - 1)) != 0 || max > kMaxQueueSize)
      return make_error("virtio-mmio: device queue maximum " + std::to_string(max) +
                        " is not a power of two <= 32768");
  std::shared_ptr<MmioTransport> t(new MmioTransport(std::move(device), mem, irq, loop, mmio_base));
  for (size_t i = 0; i < t->max_sizes_.size(); ++i)
    t->notify_.push_back(TRY(EventFd::create(EFD_NONBLOCK)));
  return t;
}

MmioTransport::MmioTransport(std::shared_ptr<VirtioDevice> device, const GuestMemory& mem,
                             Interrupt* irq, EventLoop* loop, uint64_t base)
    : device_(std::move(device)),
      mem_(&mem),
      irq_(irq),
      loop_(loop),
      base_(base),
      offered_features_(device_->device_features() | kTransportFeatures),
      max_sizes_(device_->queue_max_sizes().begin(), device_->queue_max_sizes().end()),
      queues_(max_sizes_.size()) {}

MmioTransport::~MmioTransport() {
  std::lock_guard<std::mutex> lock(mu_);
  reset_locked();
}

Status MmioTransport::register_ioevents(IoEventRegistrar& registrar) const {
  for (size_t i = 0; i < notify_.size(); ++i)
    TRY_STATUS(
        registrar.register_ioevent(base_ + offset_of(MmioReg::kQueueNotify), 4, i, notify_[i]));
  return {};
}

uint32_t MmioTransport::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_ | (needs_reset_.load() ? kNeedsReset : 0);
}

uint64_t MmioTransport::acked_features() const {
  std::lock_guard<std::mutex> lock(mu_);
  return driver_features_;
}

void MmioTransport::note_guest_error(std::atomic<uint64_t>& counter, const char* fmt, ...) {
  counter.fetch_add(1, std::memory_order_relaxed);
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  // A guest can repeat a mistake forever: the first few go to the log, the rest are counted.
  uint32_t left = warnings_left_.load();
  while (left > 0 && !warnings_left_.compare_exchange_weak(left, left - 1)) {
  }
  if (left > 0)
    LOG_WARN("virtio-mmio@0x%llx: %s", static_cast<unsigned long long>(base_), msg);
  else
    LOG_DEBUG("virtio-mmio@0x%llx: %s", static_cast<unsigned long long>(base_), msg);
}

bool MmioTransport::register_access_ok(uint64_t offset, size_t size, const char* kind) {
  if (size == 4 && offset % 4 == 0) return true;
  note_guest_error(errors_.bad_register_access, "%zu-byte %s at 0x%llx ignored", size, kind,
                   static_cast<unsigned long long>(offset));
  return false;
}

void MmioTransport::read(uint64_t offset, std::span<uint8_t> data) {
  std::memset(data.data(), 0, data.size());
  std::lock_guard<std::mutex> lock(mu_);
  if (offset >= offset_of(MmioReg::kConfig)) {
    // Any width and offset (docs/security.md #9); the device copies what overlaps its config.
    device_->read_config(offset - offset_of(MmioReg::kConfig), data);
    return;
  }
  if (!register_access_ok(offset, data.size(), "read")) return;
  const uint32_t v = read_register(static_cast<MmioReg>(offset));
  std::memcpy(data.data(), &v, 4);
}

void MmioTransport::write(uint64_t offset, std::span<const uint8_t> data) {
  std::lock_guard<std::mutex> lock(mu_);
  if (offset >= offset_of(MmioReg::kConfig)) {
    device_->write_config(offset - offset_of(MmioReg::kConfig), data);
    return;
  }
  if (!register_access_ok(offset, data.size(), "write")) return;
  uint32_t v;
  std::memcpy(&v, data.data(), 4);
  write_register(static_cast<MmioReg>(offset), v);
}

void MmioTransport::write_status(uint32_t value) {
  if (value == 0) {  // virtio 1.2 §4.2.2.1: writing 0 resets the device
    reset_locked();
    return;
  }
  // Drivers write back what they read plus a new bit, so NEEDS_RESET may come along: ignore it.
  value &= ~kNeedsReset;
  const uint32_t added = value & ~status_;
  const uint32_t known = kAcknowledge | kDriver | kFeaturesOk | kDriverOk | kFailed;
  if ((value & status_) != status_ || (value & ~known) != 0) {
    note_guest_error(errors_.bad_status_write, "status 0x%x -> 0x%x refused", status_, value);
    return;
  }
  if (added & kFailed) {  // the driver gave up (virtio 1.2 §2.1); wait for a reset
    status_ |= kFailed;
    return;
  }
  if (status_ & kFailed) return;
  // virtio 1.2 §3.1.1: each bit only after the ones before it.
  struct Step {
    uint32_t bit, needs;
  };
  constexpr Step kSteps[] = {{kAcknowledge, 0},
                             {kDriver, kAcknowledge},
                             {kFeaturesOk, kAcknowledge | kDriver},
                             {kDriverOk, kAcknowledge | kDriver | kFeaturesOk}};
  for (const Step& step : kSteps) {
    if (!(added & step.bit)) continue;
    if ((status_ & step.needs) != step.needs) {
      note_guest_error(errors_.bad_status_write, "status bit 0x%x before 0x%x refused", step.bit,
                       step.needs);
      return;
    }
    if (step.bit == kFeaturesOk && !negotiate_features()) return;
    status_ |= step.bit;
    if (step.bit == kDriverOk) activate();
  }
}

bool MmioTransport::negotiate_features() {
  // virtio 1.2 §2.2.1, §6.1: only offered features, and a version 2 device needs VERSION_1.
  if (driver_features_ & ~offered_features_) {
    note_guest_error(errors_.refused_features, "FEATURES_OK refused: features 0x%llx not offered",
                     static_cast<unsigned long long>(driver_features_ & ~offered_features_));
    return false;
  }
  if (!(driver_features_ & kFVersion1)) {
    note_guest_error(errors_.refused_features,
                     "FEATURES_OK refused: VIRTIO_F_VERSION_1 not accepted");
    return false;
  }
  return true;
}

void MmioTransport::activate() {
  ActivationContext ctx;
  ctx.memory = mem_;
  ctx.acked_features = driver_features_;
  ctx.signals = this;
  ctx.loop = loop_;
  ctx.errors = &errors_;
  for (uint16_t i = 0; i < queues_.size(); ++i) {
    auto q = Queue::activate(*mem_, queue_state(i, true), max_sizes_[i]);
    if (!q.ok()) {
      errors_.refused_queue.fetch_add(1);
      report_needs_reset(q.error());
      return;
    }
    ctx.queues.push_back(std::move(q).value());
  }
  auto s = device_->activate(std::move(ctx));
  if (!s.ok()) {
    if (is_guest_error(s.error())) errors_.refused_queue.fetch_add(1);
    report_needs_reset(s.error());
    return;
  }
  auto watched = watch_queues();
  if (!watched.ok()) {  // a host failure: the device cannot be driven
    LOG_ERROR("virtio-mmio@0x%llx: %s", static_cast<unsigned long long>(base_),
              watched.error().describe().c_str());
    active_ = true;  // so reset_locked() removes what was added
    report_needs_reset(watched.error());
    return;
  }
  active_ = true;
  LOG_INFO("virtio-mmio@0x%llx: %s DRIVER_OK features 0x%llx",
           static_cast<unsigned long long>(base_), device_type_name(device_->device_type()),
           static_cast<unsigned long long>(driver_features_));
}

Status MmioTransport::watch_queues() {
  if (loop_ == nullptr) return {};
  for (uint16_t i = 0; i < queues_.size(); ++i) {
    if (!queues_[i].ready) continue;
    TRY_STATUS(loop_->add(notify_[i].fd(), EPOLLIN, [this, i](uint32_t) {
      (void)notify_[i].read();
      if (!needs_reset_.load()) device_->queue_notify(i);
    }));
  }
  return {};
}

void MmioTransport::reset_locked() {
  if (active_ && loop_ != nullptr) {
    for (uint16_t i = 0; i < queues_.size(); ++i)
      if (queues_[i].ready) (void)loop_->remove(notify_[i].fd());
  }
  // Waits for a queue_notify in progress on the loop thread (see the threading contract).
  device_->reset();
  active_ = false;
  status_ = 0;
  device_features_sel_ = driver_features_sel_ = queue_sel_ = 0;
  driver_features_ = 0;
  for (auto& q : queues_)
    q = QueueRegs{};
  needs_reset_.store(false);
  reset_reported_.store(false);
  interrupt_status_.store(0);
}

void MmioTransport::notify(uint32_t index) {
  // docs/security.md #11: a missing or not-ready queue, or a device not running, ignores it.
  if (index >= queues_.size() || !queues_[index].ready || !active_ || needs_reset_.load()) {
    note_guest_error(errors_.bad_register_access, "notify for queue %u ignored", index);
    return;
  }
  if (loop_ != nullptr) {
    // The same path as an ioeventfd: the loop's handler calls queue_notify().
    auto s = notify_[index].write(1);
    if (!s.ok()) LOG_WARN("virtio-mmio notify: %s", s.error().describe().c_str());
    return;
  }
  device_->queue_notify(static_cast<uint16_t>(index));
}

void MmioTransport::signal_used(uint16_t) {
  interrupt_status_.fetch_or(kIntUsedBuffer);
  if (irq_ != nullptr) irq_->trigger();
}

void MmioTransport::signal_config_change() {
  config_generation_.fetch_add(1);
  interrupt_status_.fetch_or(kIntConfigChange);
  if (irq_ != nullptr) irq_->trigger();
}

void MmioTransport::report_needs_reset(const Error& why) {
  if (reset_reported_.exchange(true)) return;
  errors_.needs_reset.fetch_add(1);
  LOG_WARN("virtio-mmio@0x%llx: %s needs reset: %s", static_cast<unsigned long long>(base_),
           device_type_name(device_->device_type()), why.describe().c_str());
  // virtio 1.2 §2.1.2: after DRIVER_OK, NEEDS_RESET comes with a configuration change notification.
  // The interrupt bit is set before the status bit, so a driver that sees NEEDS_RESET in STATUS
  // also finds the config-change cause in INTERRUPT_STATUS.
  interrupt_status_.fetch_or(kIntConfigChange);
  needs_reset_.store(true);
  if (irq_ != nullptr) irq_->trigger();
}

}  // namespace carapace::virtio
