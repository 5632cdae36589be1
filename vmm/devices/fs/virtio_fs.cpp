// virtio-fs device: queues to the FileServer, binding, snapshots (virtio_fs.h).
#include "vmm/devices/fs/virtio_fs.h"

#include <cstring>

#include "vmm/virtio/state_codec.h"

namespace carapace {

namespace {

// virtio 1.2 §5.11.4: the tag is UTF-8, NUL-padded, not NUL-terminated when 36 bytes long.
// Control characters are refused too: the tag is printed in one-line errors and listings.
Status check_tag(const std::string& tag) {
  bool plain = !tag.empty() && tag.size() <= VirtioFs::kTagBytes;
  for (unsigned char c : tag)
    plain = plain && c >= 0x20 && c != 0x7f;
  if (!plain)
    return as_invalid_input(
        make_error("virtio-fs: the tag must be 1..36 bytes without NUL or control characters"));
  return {};
}

void add_counters(fs::FsCounters& into, const fs::FsCounters& c) {
  into.requests += c.requests;
  into.errors += c.errors;
  into.bad_requests += c.bad_requests;
  into.refused += c.refused;
}

}  // namespace

Result<std::shared_ptr<VirtioFs>> VirtioFs::create(const FsDeviceConfig& config) {
  TRY_STATUS(check_tag(config.tag));
  std::unique_ptr<fs::FileServer> server;
  if (!config.shared_dir.empty()) server = TRY(fs::FileServer::create(config));
  Config c{};
  std::memcpy(c.tag, config.tag.data(), config.tag.size());
  c.num_request_queues = 1;
  return std::shared_ptr<VirtioFs>(new VirtioFs(config, std::move(server), c));
}

VirtioFs::VirtioFs(const FsDeviceConfig& share, std::unique_ptr<fs::FileServer> server,
                   const Config& space)
    : DeviceBase({.type = virtio::DeviceType::kFs,
                  .name = "virtio-fs",
                  .queue_max_sizes = kQueueMaxSizes,
                  .features = 0,
                  .state_version = kStateVersion}),
      share_(share),
      server_(std::move(server)),
      space_(space) {}

Status VirtioFs::bind(const std::string& shared_dir, FsMode mode) {
  auto busy = [this] {
    Error e = as_invalid_input(make_error(
        "virtio-fs " + share_.tag + ": the guest has the share mounted (a FUSE session is live)"));
    e.sys_errno = EBUSY;
    return e;
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (live_locked()) return busy();
  }
  FsDeviceConfig next = share_;
  next.shared_dir = shared_dir;
  next.mode = mode;
  // The folder is opened outside the lock: it is host I/O, and the queues go on meanwhile.
  auto opened = fs::FileServer::create(next);
  if (!opened.ok()) return opened.take_error();
  std::unique_ptr<fs::FileServer> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The guest may have sent INIT to the old server while the folder was being opened.
    if (live_locked()) return busy();
    if (server_) add_counters(retired_, server_->counters());
    old = std::move(server_);
    server_ = std::move(*opened);
    // Not the tag: tag() reads it without the lock, and it never changes.
    share_.shared_dir = next.shared_dir;
    share_.mode = next.mode;
  }
  return {};  // `old` closes its fds here, outside the lock
}

VirtioFs::Binding VirtioFs::binding() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Binding{share_.tag, server_ ? share_.shared_dir : std::string(), share_.mode,
                 live_locked()};
}

void VirtioFs::read_config(uint64_t offset, std::span<uint8_t> data) const {
  virtio::read_config_struct(space_, offset, data);
}

Status VirtioFs::activate(virtio::ActivationContext ctx) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ctx.queues.size() != 2) return make_error("virtio-fs: expects two queues");
  ctx_ = std::move(ctx);
  broken_ = false;
  return {};
}

void VirtioFs::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  ctx_.reset();
  broken_ = false;
  if (server_) server_->reset();  // a new driver starts with INIT and knows no node id or handle
}

void VirtioFs::queue_notify(uint16_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index > 1) return;
  process_locked(index);
}

Result<virtio::DeviceSnapshot> VirtioFs::save() {
  std::lock_guard<std::mutex> lock(mu_);
  // docs/security.md #61: a live session's node ids and handles are host fds; a restored guest
  // would name fds this process does not have (or has for something else).
  if (live_locked())
    return as_invalid_input(
        make_error("virtio-fs " + share_.tag +
                   ": the guest has the share mounted (a live FUSE session holds host files); "
                   "snapshot before it mounts or after it unmounts"));
  ByteWriter w;
  w.u32(kStateVersion);
  w.string(share_.tag);
  return virtio::DeviceSnapshot{virtio::queue_states(ctx_), w.take()};
}

Status VirtioFs::restore(std::span<const uint8_t> device,
                         std::optional<virtio::ActivationContext> ctx) {
  ByteReader r(device);
  TRY_STATUS(virtio::expect_version(r, kStateVersion, "virtio-fs"));
  const std::string tag = TRY(r.string("virtio-fs tag", kTagBytes));
  TRY_STATUS(r.expect_end("virtio-fs state"));
  // The snapshot's tag is not printed: it comes from a file and may hold anything.
  if (tag != share_.tag)
    return as_invalid_input(make_error("virtio-fs: the snapshot's device has another tag than '" +
                                       share_.tag + "' (--fs devices go in the snapshot's order)"));
  if (ctx) return activate(std::move(*ctx));
  return {};
}

fs::FsCounters VirtioFs::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  fs::FsCounters c = retired_;
  if (server_) add_counters(c, server_->counters());
  return c;
}

uint32_t VirtioFs::serve_locked(const virtio::DescriptorChain& chain) {
  if (server_) {
    const uint64_t bad_before = server_->counters().bad_requests;
    const uint32_t used = server_->handle(chain);
    if (server_->counters().bad_requests != bad_before && ctx_->errors != nullptr)
      ctx_->errors->bad_request.fetch_add(1, std::memory_order_relaxed);
    return used;
  }
  ++retired_.requests;
  const uint32_t used = fs::FileServer::refuse(chain, kUnboundErrno);
  if (used > 0) ++retired_.errors;
  return used;
}

// virtio 1.2 §2.7.10 and vmm/virtio/README.md, Writing a device: every popped chain is used
// exactly once, with the reply's length (0 for FORGET and for requests with no room to answer).
void VirtioFs::process_locked(uint16_t index) {
  if (!ctx_ || broken_) return;
  virtio::Queue& q = ctx_->queues[index];
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
      (void)q.add_used(chain.head(), serve_locked(chain));
    }
  } while (q.enable_notification());
  if (q.needs_notification()) ctx_->signals->signal_used(index);
}

}  // namespace carapace
