// virtio-fs device: queues to the FileServer (virtio_fs.h).
#include "vmm/devices/fs/virtio_fs.h"

#include <cstring>

namespace carapace {

Result<std::shared_ptr<VirtioFs>> VirtioFs::create(const FsDeviceConfig& config) {
  // virtio 1.2 §5.11.4: the tag is UTF-8, NUL-padded, not NUL-terminated when 36 bytes long.
  if (config.tag.empty() || config.tag.size() > kTagBytes ||
      config.tag.find('\0') != std::string::npos)
    return as_invalid_input(make_error("virtio-fs: the tag must be 1..36 bytes without NUL"));
  auto server = TRY(fs::FileServer::create(config));
  Config c{};
  std::memcpy(c.tag, config.tag.data(), config.tag.size());
  c.num_request_queues = 1;
  return std::shared_ptr<VirtioFs>(new VirtioFs(std::move(server), c));
}

VirtioFs::VirtioFs(std::unique_ptr<fs::FileServer> server, const Config& config)
    : DeviceBase({.type = static_cast<virtio::DeviceType>(kDeviceType),
                  .name = "virtio-fs",
                  .queue_max_sizes = kQueueMaxSizes,
                  .features = 0,
                  .state_version = 1}),
      server_(std::move(server)),
      config_(config) {}

void VirtioFs::read_config(uint64_t offset, std::span<uint8_t> data) const {
  virtio::read_config_struct(config_, offset, data);
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
  server_->reset();  // a new driver starts with INIT and knows no node id or handle
}

void VirtioFs::queue_notify(uint16_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  if (index > 1) return;
  process_locked(index);
}

Result<virtio::DeviceSnapshot> VirtioFs::save() {
  return make_error("virtio-fs: snapshots are not supported (node ids name host fds)");
}

fs::FsCounters VirtioFs::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return server_->counters();
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
      const uint64_t bad_before = server_->counters().bad_requests;
      const uint32_t used = server_->handle(chain);
      if (server_->counters().bad_requests != bad_before && ctx_->errors != nullptr)
        ctx_->errors->bad_request.fetch_add(1, std::memory_order_relaxed);
      (void)q.add_used(chain.head(), used);
    }
  } while (q.enable_notification());
  if (q.needs_notification()) ctx_->signals->signal_used(index);
}

}  // namespace carapace
