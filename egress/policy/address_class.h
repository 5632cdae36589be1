// The SSRF classifier: which kind of destination an address is, so the egress proxy can refuse
// the ones that reach the host, its local networks or the cloud metadata service whatever the
// policy's name rules say. Ranges from the IANA special-purpose registries (RFC 6890).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/base/result.h"
#include "egress/policy/ip_address.h"

namespace carapace::egress {

enum class AddressClass : uint8_t {
  kPublic,
  kUnspecified,
  kLoopback,
  kPrivate,
  kLinkLocal,
  kCgnat,
  kMulticast,
  kBroadcast,
  kReserved,
  kHostOwn
};

// "public", "unspecified", "loopback", "private", "link-local", "cgnat", "multicast",
// "broadcast", "reserved", "host's own address".
const char* address_class_name(AddressClass c);

// The IPv4 address an IPv6 address carries and that a stack, a NAT64 gateway or a 6to4 relay
// would deliver to: IPv4-mapped ::ffff:0:0/96 and IPv4-compatible ::/96 (RFC 4291 §2.5.5; :: and
// ::1 excepted), NAT64 64:ff9b::/96 (RFC 6052 §2.1) and 6to4 2002::/16 (RFC 3056 §2). nullopt
// for an IPv4 address and for any other IPv6 address.
std::optional<IpAddress> embedded_v4(const IpAddress& a);

// IPv4: 0.0.0.0 unspecified and the rest of 0/8 reserved, 127/8 loopback, 10/8, 172.16/12,
// 192.168/16 and 198.18/15 (benchmarking, never routed) private, 169.254/16 link-local (the
// 169.254.169.254 metadata service), 100.64/10 cgnat, 224/4 multicast, 255.255.255.255
// broadcast, the rest of 240/4 and 192.0.0/24 reserved; the rest public, the TEST-NETs 192.0.2/24,
// 198.51.100/24 and 203.0.113/24 included (tests use them in network namespaces).
// IPv6: an embedded IPv4 (embedded_v4) is classified as that address; :: unspecified, ::1
// loopback, fe80::/10 link-local, fc00::/7 (unique local) and fec0::/10 (site-local) private,
// ff00::/8 multicast, 100::/64 reserved (discard); the rest public, 2001:db8::/32 (documentation,
// used by tests) included.
AddressClass classify_address(const IpAddress& a);
// As above, but kHostOwn for an address that would be public, private or CGNAT and is one of
// `host_addresses` (directly or as its embedded IPv4): an address of the host reaches its own
// services, whatever network rule covers it. Loopback and the other always-refused classes keep
// their own class.
AddressClass classify_address(const IpAddress& a, std::span<const IpAddress> host_addresses);

// This host's interface addresses (getifaddrs), once each, for the above.
Result<std::vector<IpAddress>> host_interface_addresses();

}  // namespace carapace::egress
