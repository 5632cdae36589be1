#include "egress/policy/address_class.h"

#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace carapace::egress {
namespace {

// Whether `a` lies in the IPv4 network base/prefix.
bool in_v4(const IpAddress& a, uint8_t b0, uint8_t b1, uint8_t b2, uint8_t b3, int prefix) {
  return IpNetwork{IpAddress::v4(b0, b1, b2, b3), prefix}.contains(a);
}

bool starts_with_bytes(const IpAddress& a, std::initializer_list<uint8_t> prefix) {
  return std::equal(prefix.begin(), prefix.end(), a.bytes.begin());
}

AddressClass classify_v4(const IpAddress& a) {
  const auto& b = a.bytes;
  if (b[0] == 0)
    return b[1] == 0 && b[2] == 0 && b[3] == 0 ? AddressClass::kUnspecified
                                               : AddressClass::kReserved;
  if (b[0] == 127) return AddressClass::kLoopback;
  if (b[0] == 10 || in_v4(a, 172, 16, 0, 0, 12) || in_v4(a, 192, 168, 0, 0, 16))
    return AddressClass::kPrivate;
  if (in_v4(a, 198, 18, 0, 0, 15)) return AddressClass::kPrivate;  // RFC 2544 benchmarking
  if (in_v4(a, 169, 254, 0, 0, 16)) return AddressClass::kLinkLocal;
  if (in_v4(a, 100, 64, 0, 0, 10)) return AddressClass::kCgnat;  // RFC 6598 shared space
  if (in_v4(a, 224, 0, 0, 0, 4)) return AddressClass::kMulticast;
  if (b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255) return AddressClass::kBroadcast;
  if (in_v4(a, 240, 0, 0, 0, 4)) return AddressClass::kReserved;
  if (in_v4(a, 192, 0, 0, 0, 24)) return AddressClass::kReserved;  // IETF protocol assignments
  return AddressClass::kPublic;
}

AddressClass classify_v6(const IpAddress& a) {
  static const IpAddress kLoopback = [] {
    IpAddress l;
    l.family = IpAddress::Family::kV6;
    l.bytes[15] = 1;
    return l;
  }();
  if (a == IpAddress{IpAddress::Family::kV6, {}}) return AddressClass::kUnspecified;
  if (a == kLoopback) return AddressClass::kLoopback;
  const auto& b = a.bytes;
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return AddressClass::kLinkLocal;  // fe80::/10
  if ((b[0] & 0xfe) == 0xfc) return AddressClass::kPrivate;                    // fc00::/7
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return AddressClass::kPrivate;    // fec0::/10
  if (b[0] == 0xff) return AddressClass::kMulticast;
  if (starts_with_bytes(a, {0x01, 0x00, 0, 0, 0, 0, 0, 0})) return AddressClass::kReserved;
  return AddressClass::kPublic;
}

// Whether `a` reaches `host`: the same address, or the same IPv4 address once `a`'s embedded
// IPv4 and `host`'s mapped form (a dual-stack socket's view of it) are unwrapped.
bool same_host(const IpAddress& a, const IpAddress& host) {
  if (a == host) return true;
  const std::optional<IpAddress> a_v4 = a.is_v4() ? a : embedded_v4(a);
  const std::optional<IpAddress> host_v4 = host.is_v4() ? host : host.mapped_v4();
  return a_v4 && host_v4 && *a_v4 == *host_v4;
}

}  // namespace

const char* address_class_name(AddressClass c) {
  switch (c) {
    case AddressClass::kPublic:
      return "public";
    case AddressClass::kUnspecified:
      return "unspecified";
    case AddressClass::kLoopback:
      return "loopback";
    case AddressClass::kPrivate:
      return "private";
    case AddressClass::kLinkLocal:
      return "link-local";
    case AddressClass::kCgnat:
      return "cgnat";
    case AddressClass::kMulticast:
      return "multicast";
    case AddressClass::kBroadcast:
      return "broadcast";
    case AddressClass::kReserved:
      return "reserved";
    case AddressClass::kHostOwn:
      return "host's own address";
  }
  return "unknown";
}

std::optional<IpAddress> embedded_v4(const IpAddress& a) {
  if (a.is_v4()) return std::nullopt;
  const auto& b = a.bytes;
  auto tail = [&b] { return IpAddress::v4(b[12], b[13], b[14], b[15]); };
  if (auto m = a.mapped_v4()) return m;
  if (starts_with_bytes(a, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})) {
    // IPv4-compatible; :: and ::1 are IPv6's own unspecified and loopback addresses.
    const IpAddress v4 = tail();
    if (v4 == IpAddress::v4(0, 0, 0, 0) || v4 == IpAddress::v4(0, 0, 0, 1)) return std::nullopt;
    return v4;
  }
  if (starts_with_bytes(a, {0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0})) return tail();
  if (b[0] == 0x20 && b[1] == 0x02) return IpAddress::v4(b[2], b[3], b[4], b[5]);
  return std::nullopt;
}

AddressClass classify_address(const IpAddress& a) {
  if (a.is_v4()) return classify_v4(a);
  if (auto inner = embedded_v4(a)) return classify_v4(*inner);
  return classify_v6(a);
}

AddressClass classify_address(const IpAddress& a, std::span<const IpAddress> host_addresses) {
  const AddressClass c = classify_address(a);
  // Host-own wins over the classes a network allow rule may admit (an operator's 10.0.0.0/8
  // mirror rule must not open the host's own 10.0.0.5); the other classes are refused anyway.
  if (c != AddressClass::kPublic && c != AddressClass::kPrivate && c != AddressClass::kCgnat)
    return c;
  for (const IpAddress& host : host_addresses) {
    if (same_host(a, host)) return AddressClass::kHostOwn;
  }
  return c;
}

Result<std::vector<IpAddress>> host_interface_addresses() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return sys_error("getifaddrs");
  const std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> owner(list, &freeifaddrs);
  std::vector<IpAddress> out;
  for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr) continue;
    const socklen_t len =
        ifa->ifa_addr->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    auto a = IpAddress::from_sockaddr(ifa->ifa_addr, len);
    if (a && std::find(out.begin(), out.end(), *a) == out.end()) out.push_back(*a);
  }
  return out;
}

}  // namespace carapace::egress
