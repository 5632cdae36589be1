#include "vmm/machine/virtio_devices.h"

#include "vmm/devices/block/block_factory.h"
#include "vmm/devices/block/virtio_block.h"
#include "vmm/devices/fs/virtio_fs.h"
#include "vmm/devices/net/net_device.h"
#include "vmm/devices/net/net_factory.h"
#include "vmm/devices/rng/rng.h"
#include "vmm/devices/vsock/vsock_device.h"
#include "vmm/devices/vsock/vsock_factory.h"

namespace carapace {

namespace {

// KVM_IOEVENTFD on the VM, for the transports' queue notifications.
class VmIoEvents : public virtio::IoEventRegistrar {
 public:
  explicit VmIoEvents(Vm& vm) : vm_(vm) {}
  Status register_ioevent(uint64_t addr, uint32_t len, uint64_t datamatch,
                          const EventFd& fd) override {
    return vm_.register_ioeventfd(fd.fd(), addr, len, /*mmio=*/true, datamatch);
  }

 private:
  Vm& vm_;
};

}  // namespace

Status VirtioDeviceSet::attach(std::shared_ptr<virtio::VirtioDevice> device,
                               const std::string& name, EventLoop* loop) {
  auto slot = TRY(slots_.allocate());
  auto irq = std::make_unique<virtio::EventFdInterrupt>(TRY(virtio::EventFdInterrupt::create()));
  TRY_STATUS(vm_.register_irqfd(irq->event().fd(), slot.irq));
  auto transport = TRY(virtio::MmioTransport::create(std::move(device), mem_, irq.get(),
                                                     loop != nullptr ? loop : &loop_, slot.base));
  VmIoEvents ioevents(vm_);
  TRY_STATUS(transport->register_ioevents(ioevents));
  TRY_STATUS(mmio_bus_.insert(transport, slot.base, slot.size, name));
  interrupts_.push_back(std::move(irq));
  transports_.push_back(std::move(transport));
  cmdline_words_.push_back(slot.cmdline());
  return {};
}

Status VirtioDeviceSet::add_configured(const DeviceConfigs& config,
                                       std::span<EventLoop* const> fs_loops) {
  if (fs_loops.size() != config.filesystems.size())
    return make_error("virtio-fs: one event loop per device is needed");
  for (size_t i = 0; i < config.drives.size(); ++i)
    TRY_STATUS(
        attach(TRY(make_block_device(config.drives[i], loop_)), "virtio-blk" + std::to_string(i)));
  for (size_t i = 0; i < config.nets.size(); ++i)
    TRY_STATUS(
        attach(TRY(make_net_device(config.nets[i], loop_)), "virtio-net" + std::to_string(i)));
  if (config.vsock)
    TRY_STATUS(attach(TRY(make_vsock_device(*config.vsock, loop_)), "virtio-vsock"));
  if (config.rng) {
    std::shared_ptr<virtio::VirtioDevice> rng = TRY(VirtioRng::create(config.rng->limit));
    TRY_STATUS(attach(std::move(rng), "virtio-rng"));
  }
  for (size_t i = 0; i < config.filesystems.size(); ++i) {
    std::shared_ptr<virtio::VirtioDevice> fs = TRY(VirtioFs::create(config.filesystems[i]));
    TRY_STATUS(attach(std::move(fs), "virtio-fs" + std::to_string(i), fs_loops[i]));
  }
  return {};
}

std::vector<VirtioFs*> VirtioDeviceSet::filesystems() const {
  std::vector<VirtioFs*> out;
  for (const auto& t : transports_)
    if (auto* f = dynamic_cast<VirtioFs*>(&t->device())) out.push_back(f);
  return out;
}

void VirtioDeviceSet::add_counters(std::map<std::string, uint64_t>& out) const {
  uint32_t blk = 0, net_index = 0, fs_index = 0;
  auto load = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  for (const auto& t : transports_) {
    virtio::VirtioDevice* d = &t->device();
    if (auto* b = dynamic_cast<VirtioBlock*>(d)) {
      const std::string p = "blk" + std::to_string(blk++) + "_";
      BlockCounters c = b->counters();
      out[p + "requests"] = c.requests;
      out[p + "read_bytes"] = c.read_bytes;
      out[p + "write_bytes"] = c.write_bytes;
      out[p + "errors"] = c.errors;
      out[p + "io_errors"] = c.io_errors;
      out[p + "throttled"] = c.throttled;
    } else if (auto* n = dynamic_cast<net::NetDevice*>(d)) {
      const std::string p = "net" + std::to_string(net_index++) + "_";
      const net::NetCounters& c = n->counters();
      out[p + "tx_frames"] = load(c.tx_frames);
      out[p + "tx_bytes"] = load(c.tx_bytes);
      out[p + "tx_dropped_policy"] = c.tx_dropped_policy_total();
      out[p + "tx_dropped_runt"] = load(c.tx_dropped_runt);
      out[p + "tx_dropped_oversized"] = load(c.tx_dropped_oversized);
      out[p + "tx_dropped_backend"] = load(c.tx_dropped_backend);
      out[p + "rx_frames"] = load(c.rx_frames);
      out[p + "rx_bytes"] = load(c.rx_bytes);
      out[p + "rx_dropped_no_room"] = load(c.rx_dropped_no_room);
    } else if (auto* v = dynamic_cast<VirtioVsock*>(d)) {
      VirtioVsock::Stats s = v->stats();
      out["vsock_connections"] = s.connections;
      out["vsock_rst_sent"] = s.rst_sent;
      out["vsock_bad_packets"] = s.bad_packets;
      out["vsock_refused_by_cap"] = s.refused_by_cap;
      out["vsock_bytes_dropped"] = s.bytes_dropped;
    } else if (auto* f = dynamic_cast<VirtioFs*>(d)) {
      const std::string p = "fs" + std::to_string(fs_index++) + "_";
      fs::FsCounters c = f->counters();
      out[p + "requests"] = c.requests;
      out[p + "errors"] = c.errors;
      out[p + "bad_requests"] = c.bad_requests;
      out[p + "refused"] = c.refused;
    }
  }
}

Result<std::vector<VirtioDeviceBlob>> VirtioDeviceSet::save_state() {
  std::vector<VirtioDeviceBlob> blobs;
  for (size_t i = 0; i < transports_.size(); ++i) {
    VirtioDeviceBlob b;
    b.slot = static_cast<uint32_t>(i);
    b.version = virtio::MmioTransport::kStateVersion;
    b.bytes = TRY(transports_[i]->save_state());
    blobs.push_back(std::move(b));
  }
  return blobs;
}

Status VirtioDeviceSet::restore_state(std::span<const VirtioDeviceBlob> blobs) {
  auto bad = [](const std::string& why) { return as_invalid_input(make_error("virtio: " + why)); };
  if (blobs.size() != transports_.size())
    return bad("the snapshot has " + std::to_string(blobs.size()) + " devices, this VM " +
               std::to_string(transports_.size()));
  // Match by slot, each exactly once, before touching any device.
  std::vector<const VirtioDeviceBlob*> by_slot(transports_.size(), nullptr);
  for (const VirtioDeviceBlob& b : blobs) {
    if (b.slot >= by_slot.size()) return bad("device slot " + std::to_string(b.slot) + " unknown");
    if (by_slot[b.slot] != nullptr) return bad("two devices for slot " + std::to_string(b.slot));
    if (b.version != virtio::MmioTransport::kStateVersion)
      return bad("device slot " + std::to_string(b.slot) + ": state version " +
                 std::to_string(b.version) + ", this build reads " +
                 std::to_string(virtio::MmioTransport::kStateVersion));
    by_slot[b.slot] = &b;
  }
  for (size_t i = 0; i < transports_.size(); ++i) {
    auto s = transports_[i]->restore_state(by_slot[i]->bytes);
    if (!s.ok()) {
      Error e = s.take_error();
      e.message = "device slot " + std::to_string(i) + ": " + e.message;
      return e;
    }
  }
  return {};
}

}  // namespace carapace
