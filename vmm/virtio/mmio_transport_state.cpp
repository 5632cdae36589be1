// MmioTransport snapshots: the register file and queue cursors to bytes and back. Restore treats
// the bytes like a guest's register writes (docs/security.md #22): it accepts only what the status
// state machine, feature negotiation and QueueReady would have accepted, and it checks all of it
// before anything is applied, so a refused snapshot leaves no device half-activated.
#include <cstdio>
#include <string>

#include "common/base/log.h"
#include "vmm/virtio/mmio_transport.h"
#include "vmm/virtio/ring_layout.h"
#include "vmm/virtio/state_codec.h"

namespace carapace::virtio {

namespace {

constexpr uint32_t kKnownStatus = kAcknowledge | kDriver | kFeaturesOk | kDriverOk | kFailed;
constexpr uint32_t kKnownInterrupts = kIntUsedBuffer | kIntConfigChange;

std::string hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

Error bad_state(const std::string& why) {
  return as_invalid_input(make_error("virtio state: " + why));
}

// One queue as saved: the driver's registers and the device's two cursors.
struct SavedQueue {
  uint32_t num = 0;
  bool ready = false;
  uint64_t desc = 0, driver = 0, device = 0;
  uint16_t next_avail = 0, next_used = 0;
};

struct SavedTransport {
  uint32_t status = 0;
  bool needs_reset = false;
  uint32_t device_features_sel = 0, driver_features_sel = 0, queue_sel = 0;
  uint64_t driver_features = 0;
  uint32_t interrupt_status = 0;
  uint32_t config_generation = 0;
  std::vector<SavedQueue> queues;
  std::span<const uint8_t> device;
};

Result<SavedTransport> decode(ByteReader& r, size_t queue_count) {
  SavedTransport s;
  s.status = TRY(r.u32("status"));
  s.needs_reset = TRY(r.boolean("needs reset"));
  s.device_features_sel = TRY(r.u32("device features select"));
  s.driver_features_sel = TRY(r.u32("driver features select"));
  s.queue_sel = TRY(r.u32("queue select"));
  s.driver_features = TRY(r.u64("driver features"));
  s.interrupt_status = TRY(r.u32("interrupt status"));
  s.config_generation = TRY(r.u32("config generation"));
  const uint32_t n = TRY(r.u32("queue count"));
  // Checked before anything is allocated from it.
  if (n != queue_count)
    return bad_state("snapshot has " + std::to_string(n) + " queues, the device has " +
                     std::to_string(queue_count));
  s.queues.resize(n);
  for (SavedQueue& q : s.queues) {
    q.num = TRY(r.u32("queue size"));
    q.ready = TRY(r.boolean("queue ready"));
    q.desc = TRY(r.u64("descriptor table"));
    q.driver = TRY(r.u64("driver area"));
    q.device = TRY(r.u64("device area"));
    q.next_avail = TRY(r.u16("next avail"));
    q.next_used = TRY(r.u16("next used"));
  }
  s.device = TRY(r.short_blob_view("device state"));
  TRY_STATUS(r.expect_end("transport state"));
  return s;
}

// The status bits the driver can have set, in order (virtio 1.2 §3.1.1), plus FAILED on any of
// them; that is what write_status() lets a guest reach.
bool status_reachable(uint32_t status) {
  if (status & ~kKnownStatus) return false;
  const uint32_t steps = status & ~kFailed;
  constexpr uint32_t kPrefixes[] = {0, kAcknowledge, kAcknowledge | kDriver,
                                    kAcknowledge | kDriver | kFeaturesOk,
                                    kAcknowledge | kDriver | kFeaturesOk | kDriverOk};
  for (uint32_t p : kPrefixes)
    if (steps == p) return true;
  return false;
}

}  // namespace

Result<std::vector<uint8_t>> MmioTransport::save_state() {
  std::lock_guard<std::mutex> lock(mu_);
  // First the device: it finishes what it has in flight (which may set interrupt bits).
  DeviceSnapshot dev = TRY(device_->save());
  const bool needs_reset = needs_reset_.load();
  // Cursors only matter for a device that will be re-activated; a broken one waits for a reset.
  const bool running = active_ && !needs_reset;
  if (running && dev.queues.size() != queues_.size())
    return make_error("virtio-mmio: the device saved " + std::to_string(dev.queues.size()) +
                      " queues, it has " + std::to_string(queues_.size()));
  ByteWriter w;
  w.u32(device_->device_type());
  w.u32(status_);
  w.boolean(needs_reset);
  w.u32(device_features_sel_);
  w.u32(driver_features_sel_);
  w.u32(queue_sel_);
  w.u64(driver_features_);
  w.u32(interrupt_status_.load());
  w.u32(config_generation_.load());
  w.u32(static_cast<uint32_t>(queues_.size()));
  for (uint16_t i = 0; i < queues_.size(); ++i) {
    const QueueRegs& r = queues_[i];
    QueueState cursors;
    if (running) {
      cursors = dev.queues[i];
      // The device's queue was built from these registers at DRIVER_OK; anything else is a bug.
      if (cursors.ready != r.ready ||
          (r.ready && (cursors.size != r.num || cursors.desc_table != r.desc ||
                       cursors.avail_ring != r.driver || cursors.used_ring != r.device)))
        return make_error("virtio-mmio: queue " + std::to_string(i) +
                          " of the device does not match its registers");
      if (cursors.next_avail != cursors.next_used)
        return make_error("virtio-mmio: " + std::string(device_type_name(device_->device_type())) +
                          " queue " + std::to_string(i) + " has " +
                          std::to_string(uint16_t(cursors.next_avail - cursors.next_used)) +
                          " requests in flight");
    }
    w.u32(r.num);
    w.boolean(r.ready);
    w.u64(r.desc);
    w.u64(r.driver);
    w.u64(r.device);
    w.u16(cursors.next_avail);
    w.u16(cursors.next_used);
  }
  w.short_blob(dev.device);
  return w.take();
}

Status MmioTransport::restore_state(std::span<const uint8_t> bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (status_ != 0 || active_ || needs_reset_.load())
    return make_error("virtio-mmio: restore into a device the guest has already used");
  const char* name = device_type_name(device_->device_type());
  ByteReader r(bytes);
  const uint32_t type = TRY(r.u32("device type"));
  if (type != device_->device_type())
    return bad_state(std::string("snapshot has a ") + device_type_name(type) +
                     " device where this VM has " + name);
  const SavedTransport s = TRY(decode(r, queues_.size()));

  // The status state machine (virtio 1.2 §3.1.1): only what write_status() could have reached.
  if (!status_reachable(s.status))
    return bad_state(std::string(name) + ": status " + hex(s.status) + " is not reachable");
  // NEEDS_RESET is raised only at or after DRIVER_OK (activation, or a device that broke).
  if (s.needs_reset && !(s.status & kDriverOk))
    return bad_state(std::string(name) + ": NEEDS_RESET without DRIVER_OK");
  // Feature negotiation (virtio 1.2 §2.2.1): never a feature this device does not offer (a
  // restored device may be configured differently, e.g. a read-only drive), and VERSION_1 once
  // FEATURES_OK is set. Stricter than a live guest before FEATURES_OK, on purpose.
  if (s.driver_features & ~offered_features_)
    return bad_state(std::string(name) + ": driver features " +
                     hex(s.driver_features & ~offered_features_) + " not offered");
  if ((s.status & kFeaturesOk) && !(s.driver_features & kFVersion1))
    return bad_state(std::string(name) + ": FEATURES_OK without VIRTIO_F_VERSION_1");
  if (s.interrupt_status & ~kKnownInterrupts)
    return bad_state(std::string(name) + ": unknown interrupt status bits");

  // Queues: a ready one passes what QueueReady checks (docs/security.md #6, #10). The device runs
  // again only with DRIVER_OK and without NEEDS_RESET; only then are cursors meaningful, and a
  // queue then starts with nothing in flight.
  const bool running = (s.status & kDriverOk) && !s.needs_reset;
  std::vector<Queue> live;
  for (uint16_t i = 0; i < s.queues.size(); ++i) {
    const SavedQueue& q = s.queues[i];
    const std::string what = std::string(name) + " queue " + std::to_string(i) + ": ";
    QueueState st;
    st.size = q.num > 0xffff ? 0 : static_cast<uint16_t>(q.num);
    st.ready = q.ready;
    st.desc_table = q.desc;
    st.avail_ring = q.driver;
    st.used_ring = q.device;
    st.event_idx = s.driver_features & kFEventIdx;
    st.indirect = s.driver_features & kFIndirectDesc;
    st.next_avail = q.next_avail;
    st.next_used = q.next_used;
    auto valid = Queue::validate(*mem_, st, max_sizes_[i]);
    if (!valid.ok()) return bad_state(what + valid.error().message);
    if (!(running && q.ready) && (q.next_avail != 0 || q.next_used != 0))
      return bad_state(what + "cursors set on a queue that is not running");
    if (q.next_avail != q.next_used) return bad_state(what + "requests in flight");
    if (running) {
      auto built = Queue::activate(*mem_, st, max_sizes_[i]);
      if (!built.ok()) return bad_state(what + built.error().message);
      live.push_back(std::move(built).value());
    }
  }

  // Everything checked: apply the register file.
  status_ = s.status;
  device_features_sel_ = s.device_features_sel;
  driver_features_sel_ = s.driver_features_sel;
  queue_sel_ = s.queue_sel;
  driver_features_ = s.driver_features;
  for (uint16_t i = 0; i < s.queues.size(); ++i) {
    const SavedQueue& q = s.queues[i];
    queues_[i] = QueueRegs{q.num, q.ready, q.desc, q.driver, q.device};
  }
  interrupt_status_.store(s.interrupt_status);
  config_generation_.store(s.config_generation);
  needs_reset_.store(s.needs_reset);
  reset_reported_.store(s.needs_reset);  // a broken device is not reported twice

  std::optional<ActivationContext> ctx;
  if (running) {
    ctx.emplace();
    ctx->memory = mem_;
    ctx->acked_features = driver_features_;
    ctx->signals = this;
    ctx->loop = loop_;
    ctx->errors = &errors_;
    ctx->queues = std::move(live);
  }
  auto restored = device_->restore(s.device, std::move(ctx));
  if (restored.ok() && running) {
    active_ = true;
    restored = watch_queues();
  }
  if (!restored.ok()) {
    reset_locked();
    config_generation_.store(0);
    return restored.take_error();
  }
  if (running) {
    // A notification the driver sent before the snapshot may never have reached the old device;
    // a spurious one is harmless (the device finds nothing new).
    for (uint16_t i = 0; i < queues_.size(); ++i) {
      if (!queues_[i].ready) continue;
      if (loop_ != nullptr)
        (void)notify_[i].write(1);
      else
        device_->queue_notify(i);
    }
  }
  // Likewise an interrupt the driver had not yet taken: a spurious one is harmless, a lost one
  // stalls the driver.
  if (s.interrupt_status != 0 && irq_ != nullptr) irq_->trigger();
  LOG_DEBUG("virtio-mmio@0x%llx: %s restored, status 0x%x%s",
            static_cast<unsigned long long>(base_), name, s.status,
            s.needs_reset ? " (needs reset)" : "");
  return {};
}

}  // namespace carapace::virtio
