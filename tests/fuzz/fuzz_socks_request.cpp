// Fuzzes what a sandbox sends its egress proxy as a SOCKS5 client (egress/proxy/socks5_request.h,
// RFC 1928 §3-§6): the method-selection message, the request behind it, and the destination and
// name-stage decision the request leads to.
//
// Input: the client's bytes as they arrive. The greeting is parsed from the start and, when it
// is complete, the request from the bytes behind it; the request parser also gets the whole
// input, so it is explored without a greeting in front. Invariants checked:
//   - a complete message takes no more bytes than it was given, and every shorter prefix of it is
//     "more needed" (nothing is taken before its last byte came);
//   - a refusal is one line, and the shortest prefix of its input that is refused is refused the
//     same way, every shorter one being "more needed" (a bad field is refused at its byte, the
//     same however the bytes arrive);
//   - a request's reply code is one of X'01', X'07', X'08'; its port is not 0; an IPv4 or IPv6
//     request's host is a literal that parses back to the same family, a domain name's is the
//     bytes the length octet named;
//   - a destination the policy allows by name is one of the allow list's hosts (the policy below
//     allows "*.example.com:443" and "files.test" only, and denies "evil.example.com").
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "egress/policy/egress_policy.h"
#include "egress/policy/ip_address.h"
#include "egress/proxy/socks5_request.h"

using namespace carapace;
using namespace carapace::egress;

namespace {

// The longest well-formed message (a request for a 255-byte name) is 262 bytes; prefixes past
// that are checked only up to here, which keeps each input's work linear in a bounded length.
constexpr size_t kMaxPrefixes = 600;

const EgressPolicy& fuzz_policy() {
  static const EgressPolicy* p = [] {
    auto r = EgressPolicy::parse({"*.example.com:443", "files.test"}, {"evil.example.com"});
    if (!r.ok()) __builtin_trap();
    return new EgressPolicy(*r);
  }();
  return *p;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

void check_reason(const std::string& reason) {
  if (reason.empty() || reason.find('\n') != std::string::npos) __builtin_trap();
}

// The invariants every parse result shares, for parse_greeting and parse_request alike.
template <typename Parse>
auto checked(Parse parse, std::string_view in) {
  auto r = parse(in);
  if (r.ok() && *r) {
    const size_t size = (*r)->size;
    if (size == 0 || size > in.size()) __builtin_trap();
    for (size_t n = 0; n < size && n < kMaxPrefixes; n++) {
      auto p = parse(in.substr(0, n));
      if (!p.ok() || *p) __builtin_trap();
    }
  } else if (!r.ok()) {
    check_reason(r.error().reason);
    // Up to the shortest prefix that is refused: every one before it asks for more, and it is
    // refused as the whole input is.
    for (size_t n = 0; n < in.size() && n < kMaxPrefixes; n++) {
      auto p = parse(in.substr(0, n));
      if (p.ok() && *p) __builtin_trap();
      if (p.ok()) continue;
      if (p.error().reply != r.error().reply || p.error().reason != r.error().reason)
        __builtin_trap();
      break;
    }
  }
  return r;
}

void check_request(std::string_view in) {
  auto r = checked(socks5::parse_request, in);
  if (!r.ok()) {
    auto reply = r.error().reply;
    if (reply != socks5::Reply::kGeneralFailure && reply != socks5::Reply::kCommandNotSupported &&
        reply != socks5::Reply::kAddressTypeNotSupported)
      __builtin_trap();
    if (socks5::reply(reply).size() != 10) __builtin_trap();
    return;
  }
  if (!*r) return;
  const socks5::Request& req = **r;
  if (req.port == 0 || req.host.empty()) __builtin_trap();
  if (req.type == socks5::AddressType::kDomainName) {
    if (req.host.size() != static_cast<uint8_t>(in[4]) || in.substr(5, req.host.size()) != req.host)
      __builtin_trap();
  } else {
    auto a = IpAddress::parse(req.host);
    if (!a || a->is_v4() != (req.type == socks5::AddressType::kIpv4) || a->to_string() != req.host)
      __builtin_trap();
  }

  auto dest = parse_destination(req.host, req.port);
  if (!dest.ok()) return;
  Decision d = decide(fuzz_policy(), *dest);
  if (d.allowed) {
    const bool example = ends_with(dest->host, ".example.com") && dest->port == 443 &&
                         dest->host != "evil.example.com";
    if (dest->literal || !(example || dest->host == "files.test")) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto g = checked(socks5::parse_greeting, in);
  if (g.ok() && *g) {
    if ((*g)->size < 3 || (*g)->size > 257) __builtin_trap();
    check_request(in.substr((*g)->size));
  }
  check_request(in);
  return 0;
}
