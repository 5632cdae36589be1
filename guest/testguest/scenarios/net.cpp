// net: the first virtio-net device (virtio 1.2 §5.1). The guest (MAC from the config space, IPv4
// 10.0.2.15) sends, in this order:
//   1. three raw frames, EtherType 0x88b5, payload "testguest raw frame N";
//   2. an ARP request for 10.0.2.2;
//   3. UDP 10.0.2.15:4444 -> 10.0.2.2:9999 "testguest udp allowed",
//      UDP -> 10.0.2.3:9999 "testguest udp denied-addr", UDP -> 10.0.2.2:8888
//      "testguest udp denied-port", TCP SYN -> 10.0.2.2:9999 (payload "testguest tcp
//      denied-proto");
// then, with testguest.net.echo=N, prints "testguest: net echo ready" and sends each of the next N
// frames it receives back unchanged; with testguest.net.sink=N, prints "testguest: net sink ready",
// leaves its receive ring full for ~0.5 s while the host floods it, then takes N frames whose
// first payload bytes count 0, 1, 2, ... (docs/security.md #16: RX resumes once the guest drains,
// and nothing the host queued meanwhile is lost or reordered). The host test decides what must
// arrive: everything without an egress policy; with allow=10.0.2.2/32:udp:9999 only the ARP
// request, the allowed datagram and echoes that match the rule.
#include "guest/testguest/virtio/net.h"
#include "guest/testguest/cmdline.h"
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenario.h"
#include "guest/testguest/virtio/dma.h"

extern "C" void* memcpy(void* dest, const void* src, size_t n);
extern "C" void* memset(void* dest, int value, size_t n);

namespace testguest {
namespace {

using namespace virtio;

constexpr uint64_t kEchoTimeout = 20'000'000'000;  // per frame: the host sends after our line
constexpr uint8_t kGuestIp[4] = {10, 0, 2, 15};
constexpr uint8_t kHostIp[4] = {10, 0, 2, 2};
constexpr uint8_t kOtherIp[4] = {10, 0, 2, 3};
constexpr uint8_t kBroadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr uint32_t kMinFrame = 60;  // Ethernet minimum without FCS: pad to it

// Frame builder over one buffer.
struct Frame {
  uint8_t bytes[kEthMax];
  uint32_t len = 0;

  void put8(uint8_t v) { bytes[len++] = v; }
  void put16(uint16_t v) {  // network byte order
    put8(static_cast<uint8_t>(v >> 8));
    put8(static_cast<uint8_t>(v));
  }
  void put(const void* p, uint32_t n) {
    memcpy(bytes + len, p, n);
    len += n;
  }
  void put_text(const char* s) {
    while (*s)
      put8(static_cast<uint8_t>(*s++));
  }
  void ethernet(const uint8_t* dst, const uint8_t* src, uint16_t type) {
    len = 0;
    put(dst, 6);
    put(src, 6);
    put16(type);
  }
  void pad() {
    while (len < kMinFrame)
      put8(0);
  }
};

uint16_t ip_checksum(const uint8_t* p, uint32_t n) {
  uint32_t sum = 0;
  for (uint32_t i = 0; i + 1 < n; i += 2)
    sum += (uint32_t{p[i]} << 8) | p[i + 1];
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// IPv4 header (no options) + UDP or TCP + payload text.
void ipv4(Frame& f, const uint8_t* mac, const uint8_t* dst_ip, uint8_t proto, uint16_t dst_port,
          const char* text) {
  uint32_t text_len = 0;
  while (text[text_len])
    ++text_len;
  const uint32_t l4 = proto == 17 ? 8 : 20;
  f.ethernet(kBroadcast, mac, 0x0800);
  const uint32_t ip_start = f.len;
  f.put8(0x45);
  f.put8(0);
  f.put16(static_cast<uint16_t>(20 + l4 + text_len));
  f.put16(0x1234);  // identification
  f.put16(0x4000);  // don't fragment
  f.put8(64);
  f.put8(proto);
  f.put16(0);  // checksum, below
  f.put(kGuestIp, 4);
  f.put(dst_ip, 4);
  const uint16_t sum = ip_checksum(f.bytes + ip_start, 20);
  f.bytes[ip_start + 10] = static_cast<uint8_t>(sum >> 8);
  f.bytes[ip_start + 11] = static_cast<uint8_t>(sum);
  f.put16(4444);
  f.put16(dst_port);
  if (proto == 17) {
    f.put16(static_cast<uint16_t>(8 + text_len));
    f.put16(0);  // no UDP checksum (IPv4 allows it)
  } else {
    f.put16(0);
    f.put16(1);  // sequence number 1
    f.put16(0);  // ack
    f.put16(0);
    f.put16(0x5002);  // data offset 5, SYN
    f.put16(1024);    // window
    f.put16(0);       // checksum (not checked by a filter)
    f.put16(0);       // urgent
  }
  f.put_text(text);
  f.pad();
}

void arp_request(Frame& f, const uint8_t* mac) {
  f.ethernet(kBroadcast, mac, 0x0806);
  f.put16(1);       // Ethernet
  f.put16(0x0800);  // IPv4
  f.put8(6);
  f.put8(4);
  f.put16(1);  // request
  f.put(mac, 6);
  f.put(kGuestIp, 4);
  const uint8_t zero[6] = {};
  f.put(zero, 6);
  f.put(kHostIp, 4);
  f.pad();
}

uint32_t parse_count(const char* cmdline, const char* key) {
  return static_cast<uint32_t>(cmdline_u64(cmdline, key, 0));
}

// The next received frame, waiting up to kEchoTimeout for it; false when none came.
bool receive_within_timeout(NetDriver& net, const uint8_t*& frame, uint32_t& len, int& slot) {
  Deadline deadline(kEchoTimeout);
  while (!net.receive(frame, len, slot)) {
    if (deadline.expired()) return false;
    cpu_relax();
  }
  return true;
}

const char* echo(NetDriver& net, uint32_t count) {
  out << "testguest: net echo ready\n";
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* frame;
    uint32_t len;
    int slot;
    if (!receive_within_timeout(net, frame, len, slot)) {
      out << "testguest: net echoed " << dec(i) << " of " << dec(count) << " frames\n";
      return "frames to echo did not arrive";
    }
    if (!frame) return "the device completed an RX buffer with a bad length";
    const bool sent = net.send(frame, len);
    net.release(slot);
    if (!sent) return "echo could not be sent";
  }
  return nullptr;
}

const char* sink(NetDriver& net, uint32_t count) {
  out << "testguest: net sink ready\n";
  Deadline stall(1'500'000'000);  // 0.3-1.5 s with a full ring: the host's sends back up
  while (!stall.expired())
    cpu_relax();
  // Until the last frame: sequence numbers must increase; the count says whether any was lost.
  uint32_t received = 0;
  int64_t last = -1;
  while (last != static_cast<int64_t>(count) - 1) {
    const uint8_t* frame;
    uint32_t len;
    int slot;
    if (!receive_within_timeout(net, frame, len, slot)) {
      out << "testguest: net sink got " << dec(received) << " frames, the last sequence "
          << dec(last < 0 ? 0 : last) << "\n";
      return "flooded frames stopped arriving";
    }
    if (!frame || len < 18) return "a flooded frame came back malformed";
    const uint32_t seq = (uint32_t{frame[14]} << 24) | (uint32_t{frame[15]} << 16) |
                         (uint32_t{frame[16]} << 8) | frame[17];
    net.release(slot);
    if (static_cast<int64_t>(seq) <= last || seq >= count) {
      out << "testguest: net sink frame after sequence " << dec(last) << " carries " << dec(seq)
          << "\n";
      return "flooded frames reordered or duplicated";
    }
    last = seq;
    ++received;
  }
  out << "testguest: net sink received " << dec(received) << " of " << dec(count) << " frames\n";
  return nullptr;
}

}  // namespace

ScenarioResult run_net(const BootInfo& boot) {
  DeviceList list;
  const DeviceInfo* info;
  if (const char* e = start_virtio_device(boot, list, kTypeNet, info)) return e;
  static NetDriver net;
  if (const char* e = net.init(*info)) return e;
  out << "testguest: net features " << hex(net.offered) << " mac ";
  for (int i = 0; i < 6; ++i)
    out << (i ? ":" : "") << "0123456789abcdef"[net.mac[i] >> 4]
        << "0123456789abcdef"[net.mac[i] & 15];
  out << ", queues " << dec(net.rx.size()) << "/" << dec(net.tx.size()) << "\n";

  static Frame f;
  for (int i = 0; i < 3; ++i) {
    f.ethernet(kBroadcast, net.mac, 0x88b5);
    f.put_text("testguest raw frame ");
    f.put8(static_cast<uint8_t>('0' + i));
    f.pad();
    if (!net.send(f.bytes, f.len)) return "raw frame not sent";
  }
  arp_request(f, net.mac);
  if (!net.send(f.bytes, f.len)) return "ARP request not sent";
  struct Datagram {
    const uint8_t* ip;
    uint8_t proto;
    uint16_t port;
    const char* text;
  };
  const Datagram datagrams[] = {{kHostIp, 17, 9999, "testguest udp allowed"},
                                {kOtherIp, 17, 9999, "testguest udp denied-addr"},
                                {kHostIp, 17, 8888, "testguest udp denied-port"},
                                {kHostIp, 6, 9999, "testguest tcp denied-proto"}};
  for (const Datagram& d : datagrams) {
    ipv4(f, net.mac, d.ip, d.proto, d.port, d.text);
    if (!net.send(f.bytes, f.len)) return "IPv4 frame not sent";
  }
  if (!net.flush_tx()) return "the device did not take the frames";
  out << "testguest: net sent " << dec(net.frames_sent) << " frames\n";

  if (const uint32_t n = parse_count(boot.cmdline, "testguest.net.echo=")) {
    if (const char* e = echo(net, n)) return e;
    if (!net.flush_tx()) return "the device did not take the echoed frames";
    out << "testguest: net echoed " << dec(n) << " frames\n";
  }
  if (const uint32_t n = parse_count(boot.cmdline, "testguest.net.sink=")) {
    if (const char* e = sink(net, n)) return e;
  }
  net.dev.reset();
  return nullptr;
}

}  // namespace testguest
