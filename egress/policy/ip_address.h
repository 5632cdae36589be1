// IP addresses and networks as the egress policy sees them: strict literal parsing (the one
// spelling of each address that every resolver reads the same way), the sockaddr forms the proxy
// dials, and prefix containment. Pure functions; no name resolution.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/base/result.h"

namespace carapace::egress {

struct IpAddress {
  enum class Family : uint8_t { kV4, kV6 };
  Family family = Family::kV4;
  std::array<uint8_t, 16> bytes{};  // network order; IPv4 uses bytes[0..3]

  // Strict literals: a dotted quad of exactly four decimal parts 0-255 without leading zeros
  // (inet_aton would also read "010" as octal, "0x7f" as hex, "127.1" and "2130706433" as short
  // forms: each is refused), or IPv6 through inet_pton, optionally in [brackets]. A zone id
  // ("fe80::1%eth0") is refused: it names an interface, not an address.
  static std::optional<IpAddress> parse(std::string_view text);
  // AF_INET / AF_INET6 only, and only when `len` covers the whole structure.
  static std::optional<IpAddress> from_sockaddr(const sockaddr* sa, socklen_t len);
  static IpAddress v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d);

  // sockaddr_in / sockaddr_in6 with `port` (host order in, network order stored); returns the
  // length of the structure written.
  socklen_t to_sockaddr(uint16_t port, sockaddr_storage* out) const;
  // inet_ntop form; IPv6 without brackets.
  std::string to_string() const;
  // The IPv4 address inside an IPv4-mapped IPv6 address (::ffff:a.b.c.d, RFC 4291 §2.5.5.2);
  // nullopt for anything else, an IPv4 address included.
  std::optional<IpAddress> mapped_v4() const;

  bool is_v4() const { return family == Family::kV4; }
  int bit_width() const { return is_v4() ? 32 : 128; }

  bool operator==(const IpAddress&) const = default;
};

struct IpNetwork {
  IpAddress base;  // host bits zeroed
  int prefix = 0;  // 0..32 or 0..128

  // "10.0.0.0/8", "fd00::/8", "[fd00::]/8", or a bare address (= /32 or /128). A network with
  // host bits set ("10.1.0.0/8") is refused with a message naming the network that was meant:
  // silently masking would widen or shift what an operator wrote. Invalid-input errors.
  static Result<IpNetwork> parse(std::string_view text);

  // An IPv4 network also contains the IPv4-mapped IPv6 form of its addresses (the same host
  // reached through a dual-stack socket), and an IPv6 network inside ::ffff:0:0/96 contains the
  // IPv4 addresses it maps.
  bool contains(const IpAddress& a) const;
  // "10.0.0.0/8", "fd00::/8".
  std::string to_string() const;

  bool operator==(const IpNetwork&) const = default;
};

}  // namespace carapace::egress
