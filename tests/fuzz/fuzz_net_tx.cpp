// Fuzzes what a guest controls in virtio-net: the egress policy parser on arbitrary frames and
// rules, and the device's TX/RX queues over arbitrary rings, descriptors and buffers.
//
// Input: [mode:1] then
//   mode & 1 == 0 (policy): [nrules:1] nrules x [kind:1][prefix_len:1][port:2][addr:16], then
//     the frame. check_egress must not crash, and what it allows must be ARP, IPv4 or IPv6;
//     with no rules an allowed IP packet must be link NDP.
//   mode & 1 == 1 (device): [tx_log2:1][rx_log2:1][rx_len:2][rx frame: rx_len bytes][memory]
//     mode bit 1: the device has an egress policy; bit 2: EVENT_IDX; bit 3: INDIRECT_DESC.
//     The memory image holds both rings (TX at 0x0/0x1000/0x1800, RX at 0x3000/0x4000/0x4800)
//     and whatever buffers the descriptors point at. The device serves TX then RX; every frame
//     it hands the backend must be 14..65550 bytes and, with a policy, allowed by it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <vector>

#include "tests/fuzz/fuzz_memory.h"
#include "vmm/devices/net/egress_policy.h"
#include "vmm/devices/net/net_device.h"
#include "vmm/virtio/ring_layout.h"

using namespace carapace;
using namespace carapace::net;
using carapace::fuzz::Input;

namespace {

constexpr uint16_t kEtherArp = 0x0806, kEtherIpv4 = 0x0800, kEtherIpv6 = 0x86dd;

uint16_t ethertype(std::span<const uint8_t> f) {
  return static_cast<uint16_t>(f[12] << 8 | f[13]);
}

void fuzz_policy(Input& in) {
  std::vector<EgressRule> rules;
  const size_t n = in.take<uint8_t>() % 8;
  for (size_t i = 0; i < n && in.size() >= 20; ++i) {
    EgressRule r;
    const uint8_t kind = in.take<uint8_t>();
    r.ipv6 = kind & 1;
    r.protocol = static_cast<EgressRule::Protocol>((kind >> 1) % 4);
    r.prefix_len = in.take<uint8_t>();  // out-of-range lengths must match nothing, safely
    r.port = in.take<uint16_t>();
    for (auto& b : r.addr)
      b = in.take<uint8_t>();
    rules.push_back(r);
  }
  // A right-sized copy, so ASan sees any read past the frame.
  std::vector<uint8_t> frame(in.data(), in.data() + in.size());
  const EgressVerdict v = check_egress(frame, rules);
  if (static_cast<size_t>(v) >= kEgressVerdictCount) __builtin_trap();
  if (v != EgressVerdict::kAllow) return;
  if (frame.size() < kEthHeaderLen) __builtin_trap();
  const uint16_t type = ethertype(frame);
  if (type != kEtherArp && type != kEtherIpv4 && type != kEtherIpv6) __builtin_trap();
  if (rules.empty() && type == kEtherIpv4) __builtin_trap();
  // Without rules only link NDP passes: ICMPv6 directly behind the header, hop limit 255.
  if (rules.empty() && type == kEtherIpv6 && (frame[14 + 6] != 58 || frame[14 + 7] != 255))
    __builtin_trap();
}

const std::vector<EgressRule>& device_rules() {
  static const std::vector<EgressRule> rules = [] {
    std::vector<EgressRule> r(2);
    r[0].addr = {10};
    r[0].prefix_len = 8;
    r[0].protocol = EgressRule::Protocol::kTcp;
    r[0].port = 443;
    r[1].ipv6 = true;
    r[1].addr = {0x20, 0x01, 0x0d, 0xb8};
    r[1].prefix_len = 32;
    r[1].protocol = EgressRule::Protocol::kUdp;
    return r;
  }();
  return rules;
}

// The host side: checks every frame the device sends, and offers the input's RX frame.
class CheckingBackend : public NetBackend {
 public:
  explicit CheckingBackend(bool policy) : policy_(policy) {}
  int fd() const override { return -1; }
  Status send(std::span<const uint8_t> frame) override {
    if (frame.size() < kEthHeaderLen || frame.size() > kMaxFrameLen) __builtin_trap();
    if (policy_ && check_egress(frame, device_rules()) != EgressVerdict::kAllow) __builtin_trap();
    return {};
  }
  Result<RecvResult> receive(std::span<uint8_t> buf) override {
    if (rx.empty()) return RecvResult{};
    std::vector<uint8_t> f = std::move(rx.front());
    rx.pop_front();
    const size_t n = std::min(f.size(), buf.size());
    if (n != 0) std::memcpy(buf.data(), f.data(), n);
    return RecvResult{RecvResult::Kind::kFrame, f.size()};
  }
  const char* describe() const override { return "fuzz"; }

  std::deque<std::vector<uint8_t>> rx;

 private:
  bool policy_;
};

class NullSignals : public virtio::DeviceSignals {
 public:
  void signal_used(uint16_t) override {}
  void signal_config_change() override {}
  void report_needs_reset(const Error&) override {}
};

struct Rig {
  CheckingBackend* backend;
  std::shared_ptr<NetDevice> dev;
};

Rig& rig(bool policy) {
  auto build = [](bool p) {
    NetDeviceConfig c;
    c.mac = {0x02, 0, 0, 0, 0, 1};
    c.egress_policy = p;
    c.allow = device_rules();
    auto backend = std::make_unique<CheckingBackend>(p);
    CheckingBackend* raw = backend.get();
    auto dev = NetDevice::create(c, std::move(backend));
    if (!dev.ok()) std::abort();
    return new Rig{raw, std::move(dev).value()};
  };
  static Rig* open = build(false);
  static Rig* locked = build(true);
  return policy ? *locked : *open;
}

void fuzz_device(uint8_t mode, Input& in) {
  const GuestMemory& mem = fuzz::fuzz_memory();
  const uint16_t tx_size = static_cast<uint16_t>(1u << (in.take<uint8_t>() % 9));
  const uint16_t rx_size = static_cast<uint16_t>(1u << (in.take<uint8_t>() % 9));
  const size_t rx_len = std::min<size_t>(in.take<uint16_t>(), in.size());
  std::vector<uint8_t> rx_frame(in.data(), in.data() + rx_len);
  Input rest(in.data() + rx_len, in.size() - rx_len);
  fuzz::load_memory(mem, rest.data(), rest.size());

  Rig& r = rig(mode & 2);
  r.backend->rx.clear();
  r.backend->rx.push_back(rx_frame);
  r.backend->rx.push_back(std::vector<uint8_t>(60, 0xab));

  auto make_state = [&](uint16_t size, uint64_t desc, uint64_t avail, uint64_t used) {
    virtio::QueueState s;
    s.size = size;
    s.ready = true;
    s.desc_table = desc;
    s.avail_ring = avail;
    s.used_ring = used;
    s.event_idx = mode & 4;
    s.indirect = mode & 8;
    return s;
  };
  auto rxq = virtio::Queue::activate(mem, make_state(rx_size, 0x3000, 0x4000, 0x4800), 256);
  auto txq = virtio::Queue::activate(mem, make_state(tx_size, 0x0, 0x1000, 0x1800), 256);
  if (!rxq.ok() || !txq.ok()) return;
  NullSignals signals;
  virtio::GuestErrorCounters errors;
  virtio::ActivationContext ctx;
  ctx.memory = &mem;
  ctx.queues.push_back(std::move(rxq).value());
  ctx.queues.push_back(std::move(txq).value());
  ctx.acked_features = virtio::kFVersion1 | NetDevice::kFeatures;
  ctx.signals = &signals;
  ctx.errors = &errors;
  if (!r.dev->activate(std::move(ctx)).ok()) std::abort();
  r.dev->queue_notify(NetDevice::kTxQueue);
  r.dev->queue_notify(NetDevice::kRxQueue);
  r.dev->queue_notify(7);  // no such queue
  r.dev->reset();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)fuzz::fuzz_memory();  // quiets the log
  Input in(data, size);
  const uint8_t mode = in.take<uint8_t>();
  if (mode & 1)
    fuzz_device(mode, in);
  else
    fuzz_policy(in);
  return 0;
}
