#include "egress/proxy/socks5_request.h"

#include <cerrno>
#include <cstring>

#include "egress/policy/ip_address.h"

namespace carapace::egress::socks5 {
namespace {

constexpr uint8_t kCmdConnect = 0x01;       // §4
constexpr uint8_t kCmdBind = 0x02;          // §4
constexpr uint8_t kCmdUdpAssociate = 0x03;  // §4

Malformed malformed(Reply r, std::string reason) {
  return Malformed{r, std::move(reason)};
}

uint8_t byte_at(std::string_view b, size_t i) {
  return static_cast<uint8_t>(b[i]);
}

}  // namespace

Result<std::optional<Greeting>, Malformed> parse_greeting(std::string_view bytes) {
  // §3: +----+----------+----------+
  //     |VER | NMETHODS | METHODS  |   1, 1, 1 to 255 bytes
  if (bytes.empty()) return std::optional<Greeting>();
  if (byte_at(bytes, 0) != kVersion)
    return malformed(Reply::kGeneralFailure,
                     "not SOCKS version 5 (VER " + std::to_string(byte_at(bytes, 0)) + ")");
  if (bytes.size() < 2) return std::optional<Greeting>();
  const size_t n = byte_at(bytes, 1);
  if (n == 0) return malformed(Reply::kGeneralFailure, "SOCKS5 greeting offers no method");
  if (bytes.size() < 2 + n) return std::optional<Greeting>();
  Greeting g;
  g.size = 2 + n;
  g.offers_no_auth = std::memchr(bytes.data() + 2, kMethodNoAuth, n) != nullptr;
  return std::optional<Greeting>(g);
}

Result<std::optional<Request>, Malformed> parse_request(std::string_view bytes) {
  // §4: +----+-----+-------+------+----------+----------+
  //     |VER | CMD |  RSV  | ATYP | DST.ADDR | DST.PORT |   1, 1, X'00', 1, variable, 2
  const auto more = std::optional<Request>();
  if (bytes.empty()) return more;
  if (byte_at(bytes, 0) != kVersion)
    return malformed(Reply::kGeneralFailure,
                     "SOCKS5 request with VER " + std::to_string(byte_at(bytes, 0)) + ", not 5");
  if (bytes.size() < 2) return more;
  const uint8_t cmd = byte_at(bytes, 1);
  if (cmd == kCmdBind) return malformed(Reply::kCommandNotSupported, "SOCKS5 BIND is refused");
  if (cmd == kCmdUdpAssociate)
    return malformed(Reply::kCommandNotSupported, "SOCKS5 UDP ASSOCIATE is refused");
  if (cmd != kCmdConnect)
    return malformed(Reply::kCommandNotSupported, "unknown SOCKS5 command " + std::to_string(cmd));
  if (bytes.size() < 3) return more;
  if (byte_at(bytes, 2) != 0)
    return malformed(Reply::kGeneralFailure, "SOCKS5 request with a reserved byte that is not 0");
  if (bytes.size() < 4) return more;
  Request r;
  size_t addr_at = 4;
  size_t addr_len = 0;
  switch (byte_at(bytes, 3)) {
    case static_cast<uint8_t>(AddressType::kIpv4):
      r.type = AddressType::kIpv4;
      addr_len = 4;
      break;
    case static_cast<uint8_t>(AddressType::kIpv6):
      r.type = AddressType::kIpv6;
      addr_len = 16;
      break;
    case static_cast<uint8_t>(AddressType::kDomainName):
      // §5: the first octet of a domain name is its length, with no terminating NUL.
      r.type = AddressType::kDomainName;
      if (bytes.size() < 5) return more;
      addr_len = byte_at(bytes, 4);
      addr_at = 5;
      if (addr_len == 0) return malformed(Reply::kGeneralFailure, "SOCKS5 domain name is empty");
      break;
    default:
      return malformed(Reply::kAddressTypeNotSupported,
                       "unknown SOCKS5 address type " + std::to_string(byte_at(bytes, 3)));
  }
  const size_t end = addr_at + addr_len + 2;
  if (bytes.size() < end) return more;
  std::string_view addr = bytes.substr(addr_at, addr_len);
  if (r.type == AddressType::kDomainName) {
    r.host = std::string(addr);
  } else {
    IpAddress a;
    a.family = r.type == AddressType::kIpv4 ? IpAddress::Family::kV4 : IpAddress::Family::kV6;
    std::memcpy(a.bytes.data(), addr.data(), addr_len);
    r.host = a.to_string();
  }
  // DST.PORT in network octet order.
  r.port = static_cast<uint16_t>(byte_at(bytes, end - 2) << 8 | byte_at(bytes, end - 1));
  if (r.port == 0) return malformed(Reply::kGeneralFailure, "SOCKS5 request for port 0");
  r.size = end;
  return std::optional<Request>(std::move(r));
}

std::string method_reply(uint8_t method) {
  return std::string{static_cast<char>(kVersion), static_cast<char>(method)};
}

std::string reply(Reply r) {
  // VER REP RSV ATYP=IPv4 BND.ADDR=0.0.0.0 BND.PORT=0.
  std::string out(10, '\0');
  out[0] = static_cast<char>(kVersion);
  out[1] = static_cast<char>(r);
  out[3] = static_cast<char>(AddressType::kIpv4);
  return out;
}

Reply reply_for(const DialRefusal& refusal) {
  switch (refusal.kind) {
    case DialRefusal::Kind::kDenied:
      return Reply::kNotAllowed;
    case DialRefusal::Kind::kUnresolved:
      return Reply::kHostUnreachable;
    case DialRefusal::Kind::kTimeout:
      return Reply::kTtlExpired;
    case DialRefusal::Kind::kUnreachable:
      break;
  }
  switch (refusal.sys_errno) {
    case ECONNREFUSED:
      return Reply::kConnectionRefused;
    case ENETUNREACH:
      return Reply::kNetworkUnreachable;
    case EHOSTUNREACH:
      return Reply::kHostUnreachable;
    default:
      return Reply::kGeneralFailure;
  }
}

}  // namespace carapace::egress::socks5
