#include "guest/agent/dns_message.h"

namespace carapace::agent {
namespace {

constexpr size_t kMaxWireName = 255;  // RFC 1035 2.3.4
constexpr size_t kMaxLabel = 63;

uint16_t be16(std::span<const uint8_t> b, size_t at) {
  return static_cast<uint16_t>((b[at] << 8) | b[at + 1]);
}

void put16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}

void put32(std::vector<uint8_t>& out, uint32_t v) {
  put16(out, static_cast<uint16_t>(v >> 16));
  put16(out, static_cast<uint16_t>(v));
}

DnsQueryError formerr(std::string why) {
  return {DnsRcode::kFormErr, std::move(why)};
}

// Header flags (RFC 1035 4.1.1): QR(1) Opcode(4) AA TC RD | RA Z(3) RCODE(4).
constexpr uint16_t kFlagQr = 0x8000;
constexpr uint16_t kFlagRd = 0x0100;
constexpr uint16_t kFlagRa = 0x0080;

void put_header(std::vector<uint8_t>& out, uint16_t id, bool rd, DnsRcode rcode, uint16_t qd,
                uint16_t an) {
  put16(out, id);
  put16(out, static_cast<uint16_t>(kFlagQr | (rd ? kFlagRd : 0) | kFlagRa |
                                   static_cast<uint16_t>(rcode)));
  put16(out, qd);
  put16(out, an);
  put16(out, 0);  // authority
  put16(out, 0);  // additional
}

}  // namespace

std::optional<uint16_t> dns_query_id(std::span<const uint8_t> datagram) {
  if (datagram.size() < kDnsHeaderBytes) return std::nullopt;
  return be16(datagram, 0);
}

std::variant<DnsQuestion, DnsQueryError> parse_dns_query(std::span<const uint8_t> d) {
  if (d.size() < kDnsHeaderBytes) return formerr("shorter than a header");
  const uint16_t flags = be16(d, 2);
  if (flags & kFlagQr) return formerr("a response, not a query");
  if (((flags >> 11) & 0xf) != 0) return DnsQueryError{DnsRcode::kNotImp, "opcode is not QUERY"};
  if (be16(d, 4) != 1) return formerr("not exactly one question");
  if (be16(d, 6) != 0 || be16(d, 8) != 0) return formerr("a query with answers or authority");
  DnsQuestion q;
  q.id = be16(d, 0);
  q.recursion_desired = (flags & kFlagRd) != 0;
  size_t at = kDnsHeaderBytes;
  for (;;) {
    if (at >= d.size()) return formerr("the name runs past the datagram");
    const uint8_t len = d[at];
    if ((len & 0xc0) != 0) return formerr("a compressed or extended label");
    if (len > kMaxLabel) return formerr("a label over 63 bytes");
    if (len == 0) {
      ++at;
      break;
    }
    // This label and the root label after it must fit.
    if (at - kDnsHeaderBytes + 1 + len + 1 > kMaxWireName) return formerr("a name over 255 bytes");
    if (at + 1 + len > d.size()) return formerr("a label runs past the datagram");
    if (!q.name.empty()) q.name.push_back('.');
    for (size_t i = 0; i < len; ++i) {
      const auto c = static_cast<char>(d[at + 1 + i]);
      q.name.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    }
    at += 1 + len;
  }
  if (at + 4 > d.size()) return formerr("the question has no type and class");
  q.qtype = be16(d, at);
  q.qclass = be16(d, at + 2);
  at += 4;
  q.wire.assign(d.begin() + kDnsHeaderBytes, d.begin() + static_cast<ptrdiff_t>(at));
  return q;
}

std::vector<uint8_t> dns_reply(const DnsQuestion& q, DnsRcode rcode, std::optional<uint32_t> ipv4,
                               uint32_t ttl) {
  std::vector<uint8_t> out;
  out.reserve(kDnsHeaderBytes + q.wire.size() + 16);
  put_header(out, q.id, q.recursion_desired, rcode, 1, ipv4 ? 1 : 0);
  out.insert(out.end(), q.wire.begin(), q.wire.end());
  if (ipv4) {
    put16(out, 0xc000 | kDnsHeaderBytes);  // the question's name (RFC 1035 4.1.4)
    put16(out, static_cast<uint16_t>(DnsType::kA));
    put16(out, 1);  // IN
    put32(out, ttl);
    put16(out, 4);
    put32(out, *ipv4);
  }
  return out;
}

std::vector<uint8_t> dns_error_reply(uint16_t id, DnsRcode rcode) {
  std::vector<uint8_t> out;
  put_header(out, id, false, rcode, 0, 0);
  return out;
}

}  // namespace carapace::agent
