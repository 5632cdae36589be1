// Fuzzes what a sandbox controls at its egress proxy (egress/proxy): the request head in proxy
// form, the target it names, the destination and the name stage of the policy, and the head the
// proxy would send upstream.
//
// Input: [max_headers:1] then the head (lines ending in CRLF, without the final empty line, as
// SocketReader::read_head hands it over). Invariants checked on every accepted request:
//   - the forwarded head is one the origin-form parser takes back, with the same method, the
//     target's origin-form and exactly one Host, which is the target's (no CR/LF smuggled in);
//   - a destination the policy allows by name is one of the allow list's hosts (the policy
//     below allows "*.example.com:443" and "files.test" only, and denies "evil.example.com").
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/http/message_parser.h"
#include "egress/policy/egress_policy.h"
#include "egress/proxy/proxy_target.h"
#include "tests/fuzz/fuzz_memory.h"

using namespace carapace;
using namespace carapace::egress;

namespace {

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const size_t max_headers = in.take<uint8_t>();
  std::string_view head(reinterpret_cast<const char*>(in.data()), in.size());
  http::HttpRequest req;
  if (http::parse_request_head(head, max_headers, req, http::TargetForms::kProxy)) return 0;
  auto target = parse_proxy_target(req);
  if (!target.ok()) return 0;
  if (target->port == 0) __builtin_trap();

  if (target->kind == ProxyTarget::Kind::kForward) {
    std::string fwd = forward_request_head(req, *target);
    if (!ends_with(fwd, "\r\n\r\n")) __builtin_trap();
    http::HttpRequest back;
    std::string_view fwd_head(fwd.data(), fwd.size() - 2);  // without the final empty line
    if (http::parse_request_head(fwd_head, max_headers + 2, back)) __builtin_trap();
    if (back.method != req.method || back.target != target->origin_target) __builtin_trap();
    if (back.headers.count("Host") != 1) __builtin_trap();
  }

  auto dest = parse_destination(target->host, target->port);
  if (!dest.ok()) return 0;
  Decision d = decide(fuzz_policy(), *dest);
  if (d.allowed) {
    const bool example = ends_with(dest->host, ".example.com") && dest->port == 443 &&
                         dest->host != "evil.example.com";
    if (dest->literal || !(example || dest->host == "files.test")) __builtin_trap();
  }
  return 0;
}
