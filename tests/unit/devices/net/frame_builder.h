// Builds Ethernet frames (ARP, IPv4, IPv6 with extension headers, TCP/UDP/ICMP) for the
// virtio-net tests. Every length field is filled in consistently unless a test overwrites it.
#pragma once

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace carapace::net::test {

using Bytes = std::vector<uint8_t>;

inline constexpr uint8_t kTcp = 6, kUdp = 17, kIcmp = 1, kIcmpv6 = 58;
inline constexpr uint8_t kHopByHop = 0, kRouting = 43, kFragment = 44, kDestOpts = 60, kAuth = 51,
                         kEsp = 50, kNoNext = 59;

inline void put16(Bytes& b, size_t off, uint16_t v) {
  b[off] = static_cast<uint8_t>(v >> 8);
  b[off + 1] = static_cast<uint8_t>(v);
}
inline Bytes cat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline Bytes eth(uint16_t type, const Bytes& payload) {
  Bytes f = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56,  // destination
             0x02, 0x00, 0x00, 0x00, 0x00, 0x01,  // source
             0,    0};
  put16(f, 12, type);
  return cat(f, payload);
}

inline Bytes arp_body() {
  Bytes b(28, 0);
  put16(b, 0, 1);       // Ethernet
  put16(b, 2, 0x0800);  // IPv4
  b[4] = 6;
  b[5] = 4;
  put16(b, 6, 1);  // request
  return b;
}

inline std::array<uint8_t, 4> v4(const char* s) {
  std::array<uint8_t, 4> a{};
  inet_pton(AF_INET, s, a.data());
  return a;
}
inline std::array<uint8_t, 16> v6(const char* s) {
  std::array<uint8_t, 16> a{};
  inet_pton(AF_INET6, s, a.data());
  return a;
}

inline Bytes tcp(uint16_t dport) {
  Bytes b(20, 0);
  put16(b, 0, 40000);
  put16(b, 2, dport);
  b[12] = 5 << 4;  // data offset
  return b;
}
inline Bytes udp(uint16_t dport, size_t payload = 0) {
  Bytes b(8 + payload, 0);
  put16(b, 0, 40000);
  put16(b, 2, dport);
  put16(b, 4, static_cast<uint16_t>(8 + payload));
  return b;
}
inline Bytes icmp_echo() {
  return Bytes{8, 0, 0, 0, 0, 1, 0, 1};
}

// An IPv4 packet; `frag` is the flags+offset field (e.g. 0x2000 more fragments, 0x0001 offset
// 8 bytes), `options` extra 32-bit words of header.
inline Bytes ipv4(uint8_t proto, std::array<uint8_t, 4> dst, const Bytes& l4, uint16_t frag = 0,
                  size_t options = 0) {
  const size_t ihl = 20 + 4 * options;
  Bytes h(ihl, 0);
  h[0] = static_cast<uint8_t>(0x40 | (ihl / 4));
  put16(h, 2, static_cast<uint16_t>(ihl + l4.size()));
  put16(h, 6, frag);
  h[8] = 64;
  h[9] = proto;
  h[12] = 10, h[13] = 0, h[14] = 2, h[15] = 15;  // source 10.0.2.15
  for (int i = 0; i < 4; ++i)
    h[16 + i] = dst[i];
  for (size_t i = 20; i < ihl; ++i)
    h[i] = 1;  // NOP options
  return eth(0x0800, cat(h, l4));
}

inline Bytes ipv6(uint8_t next, std::array<uint8_t, 16> dst, const Bytes& payload,
                  uint8_t hop_limit = 64) {
  Bytes h(40, 0);
  h[0] = 0x60;
  put16(h, 4, static_cast<uint16_t>(payload.size()));
  h[6] = next;
  h[7] = hop_limit;
  h[8] = 0xfe, h[9] = 0x80, h[23] = 0x0f;  // source fe80::f
  for (int i = 0; i < 16; ++i)
    h[24 + i] = dst[i];
  return eth(0x86dd, cat(h, payload));
}

// A generic extension header (hop-by-hop, destination options) of 8 * (units + 1) bytes.
inline Bytes ext(uint8_t next, uint8_t units = 0) {
  Bytes b(8u * (units + 1u), 0);
  b[0] = next;
  b[1] = units;
  b[2] = 1;  // PadN filling the rest
  b[3] = static_cast<uint8_t>(b.size() - 4);
  return b;
}
inline Bytes routing(uint8_t next, uint8_t segments_left) {
  Bytes b(24, 0);  // type 4 (SRH) with one 16-byte segment
  b[0] = next;
  b[1] = 2;
  b[2] = 4;
  b[3] = segments_left;
  return b;
}
// Fragment header: `offset` in 8-byte units.
inline Bytes frag6(uint8_t next, uint16_t offset, bool more) {
  Bytes b(8, 0);
  b[0] = next;
  put16(b, 2, static_cast<uint16_t>(offset << 3 | (more ? 1 : 0)));
  return b;
}
inline Bytes auth(uint8_t next) {
  Bytes b(16, 0);  // 12-byte fixed part + 4-byte ICV: length field (16 / 4) - 2
  b[0] = next;
  b[1] = 2;
  return b;
}
// ICMPv6 neighbour discovery message of `type` with its minimum length.
inline Bytes ndp(uint8_t type) {
  Bytes b(type == 133 ? 8 : 24, 0);
  b[0] = type;
  return b;
}

}  // namespace carapace::net::test
