#include "egress/policy/ip_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>

#include "egress/policy/quote.h"

namespace carapace::egress {
namespace {

// The longest IPv6 text inet_pton can accept ("ffff:...:255.255.255.255" is 45 bytes).
constexpr size_t kMaxV6Text = INET6_ADDRSTRLEN;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// One part of a dotted quad: 1-3 decimal digits, no leading zero unless it is "0", at most 255.
std::optional<uint8_t> parse_quad_part(std::string_view part) {
  if (part.empty() || part.size() > 3) return std::nullopt;
  if (part.size() > 1 && part[0] == '0') return std::nullopt;
  unsigned value = 0;
  for (char c : part) {
    if (!is_digit(c)) return std::nullopt;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value > 255) return std::nullopt;
  return static_cast<uint8_t>(value);
}

std::optional<IpAddress> parse_v4(std::string_view text) {
  IpAddress a;
  for (int i = 0; i < 4; ++i) {
    const size_t dot = text.find('.');
    if ((i < 3) != (dot != std::string_view::npos)) return std::nullopt;
    auto part = parse_quad_part(text.substr(0, dot));
    if (!part) return std::nullopt;
    a.bytes[i] = *part;
    text = i < 3 ? text.substr(dot + 1) : std::string_view();
  }
  return a;
}

std::optional<IpAddress> parse_v6(std::string_view text) {
  // inet_pton reads a C string: an embedded NUL would end the text early ("::1\0junk"), so only
  // the characters an IPv6 literal can hold are let through. That also refuses "%zone".
  if (text.empty() || text.size() >= kMaxV6Text) return std::nullopt;
  for (char c : text) {
    const bool hex = is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!hex && c != ':' && c != '.') return std::nullopt;
  }
  char buf[kMaxV6Text];
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  IpAddress a;
  a.family = IpAddress::Family::kV6;
  if (inet_pton(AF_INET6, buf, a.bytes.data()) != 1) return std::nullopt;
  return a;
}

// The prefix length after '/': decimal, no sign, no leading zeros.
std::optional<int> parse_prefix(std::string_view text, int max) {
  if (text.empty() || text.size() > 3 || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0 || value > max)
    return std::nullopt;
  return value;
}

// Whether the first `prefix` bits of `a` and `b` agree.
bool same_prefix(const IpAddress& a, const IpAddress& b, int prefix) {
  const int whole = prefix / 8;
  if (std::memcmp(a.bytes.data(), b.bytes.data(), static_cast<size_t>(whole)) != 0) return false;
  const int rest = prefix % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a.bytes[whole] & mask) == (b.bytes[whole] & mask);
}

IpAddress masked(IpAddress a, int prefix) {
  for (int bit = prefix; bit < a.bit_width(); ++bit)
    a.bytes[bit / 8] &= static_cast<uint8_t>(~(0x80 >> (bit % 8)));
  return a;
}

IpAddress v4_mapped_form(const IpAddress& v4) {
  IpAddress m;
  m.family = IpAddress::Family::kV6;
  m.bytes[10] = 0xff;
  m.bytes[11] = 0xff;
  std::memcpy(&m.bytes[12], v4.bytes.data(), 4);
  return m;
}

Error network_error(std::string_view text, std::string_view why) {
  return as_invalid_input(make_error("network " + quoted(text) + ": " + std::string(why)));
}

}  // namespace

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']')
    return parse_v6(text.substr(1, text.size() - 2));
  if (text.find(':') != std::string_view::npos) return parse_v6(text);
  return parse_v4(text);
}

std::optional<IpAddress> IpAddress::from_sockaddr(const sockaddr* sa, socklen_t len) {
  if (sa == nullptr || len < static_cast<socklen_t>(sizeof(sa_family_t))) return std::nullopt;
  IpAddress a;
  if (sa->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    sockaddr_in in{};
    std::memcpy(&in, sa, sizeof(in));
    std::memcpy(a.bytes.data(), &in.sin_addr, 4);
    return a;
  }
  if (sa->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, sa, sizeof(in6));
    a.family = Family::kV6;
    std::memcpy(a.bytes.data(), &in6.sin6_addr, 16);
    return a;
  }
  return std::nullopt;
}

IpAddress IpAddress::v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  IpAddress ip;
  ip.bytes[0] = a;
  ip.bytes[1] = b;
  ip.bytes[2] = c;
  ip.bytes[3] = d;
  return ip;
}

socklen_t IpAddress::to_sockaddr(uint16_t port, sockaddr_storage* out) const {
  std::memset(out, 0, sizeof(*out));
  if (is_v4()) {
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    std::memcpy(&in.sin_addr, bytes.data(), 4);
    std::memcpy(out, &in, sizeof(in));
    return sizeof(in);
  }
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(port);
  std::memcpy(&in6.sin6_addr, bytes.data(), 16);
  std::memcpy(out, &in6, sizeof(in6));
  return sizeof(in6);
}

std::string IpAddress::to_string() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(is_v4() ? AF_INET : AF_INET6, bytes.data(), buf, sizeof(buf));
  return buf;
}

std::optional<IpAddress> IpAddress::mapped_v4() const {
  static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (is_v4() || std::memcmp(bytes.data(), kMappedPrefix, 12) != 0) return std::nullopt;
  return v4(bytes[12], bytes[13], bytes[14], bytes[15]);
}

Result<IpNetwork> IpNetwork::parse(std::string_view text) {
  const size_t slash = text.rfind('/');
  std::string_view addr_text = text.substr(0, slash);
  auto addr = IpAddress::parse(addr_text);
  if (!addr) return network_error(text, "not an IPv4 or IPv6 address");
  IpNetwork net;
  net.prefix = addr->bit_width();
  if (slash != std::string_view::npos) {
    auto prefix = parse_prefix(text.substr(slash + 1), addr->bit_width());
    if (!prefix) {
      return network_error(
          text, "prefix length is not a number from 0 to " + std::to_string(addr->bit_width()));
    }
    net.prefix = *prefix;
  }
  net.base = masked(*addr, net.prefix);
  if (!(net.base == *addr)) {
    return network_error(text, "host bits are set; did you mean " + net.to_string() + "?");
  }
  return net;
}

bool IpNetwork::contains(const IpAddress& a) const {
  if (a.family == base.family) return same_prefix(base, a, prefix);
  if (base.is_v4()) {
    auto inner = a.mapped_v4();
    return inner && same_prefix(base, *inner, prefix);
  }
  return same_prefix(base, v4_mapped_form(a), prefix);
}

std::string IpNetwork::to_string() const {
  return base.to_string() + "/" + std::to_string(prefix);
}

}  // namespace carapace::egress
