#include "egress/proxy/proxy_target.h"

#include <array>
#include <optional>
#include <string_view>

#include "common/base/flag_values.h"
#include "common/http/message_parser.h"

namespace carapace::egress {
namespace {

Error bad_target(const std::string& why) {
  return as_invalid_input(make_error(why));
}

struct Authority {
  std::string host;
  std::optional<uint16_t> port;
};

// "host", "host:port", "[v6]", "[v6]:port" (RFC 3986 3.2.2-3.2.3). The host's own syntax is
// checked later, by the policy's destination parser.
Result<Authority> split_authority(std::string_view a) {
  if (a.find('@') != std::string_view::npos)
    return bad_target("user information in the target's authority is refused");
  Authority out;
  std::string_view port_text;
  bool has_port = false;
  if (!a.empty() && a[0] == '[') {
    size_t close = a.find(']');
    if (close == std::string_view::npos) return bad_target("unterminated '[' in the target host");
    out.host = std::string(a.substr(1, close - 1));
    std::string_view rest = a.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return bad_target("junk after ']' in the target host");
      port_text = rest.substr(1);
      has_port = true;
    }
  } else {
    size_t colon = a.rfind(':');
    if (colon != std::string_view::npos) {
      if (a.find(':') != colon) return bad_target("an IPv6 target host needs [brackets]");
      port_text = a.substr(colon + 1);
      has_port = true;
      a = a.substr(0, colon);
    }
    out.host = std::string(a);
  }
  if (out.host.empty()) return bad_target("the target has no host");
  if (has_port) {
    auto port = decimal_u64(port_text);
    if (!port || *port == 0 || *port > 65535 || port_text.size() > 5 || port_text[0] == '0')
      return bad_target("the target's port must be 1-65535");
    out.port = static_cast<uint16_t>(*port);
  }
  return out;
}

bool is_hop_by_hop(std::string_view name, const http::HttpHeaders& headers) {
  static constexpr std::array<std::string_view, 7> kFields = {
      "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization",
      "TE",         "Trailer",    "Upgrade"};
  for (std::string_view f : kFields) {
    if (http::iequals(name, f)) return true;
  }
  return headers.has_token("Connection", name);
}

}  // namespace

Result<ProxyTarget> parse_proxy_target(const http::HttpRequest& req) {
  ProxyTarget t;
  std::string_view target = req.target;
  if (req.method == "CONNECT") {
    auto a = TRY(split_authority(target));
    if (!a.port) return bad_target("CONNECT needs host:port");
    t.kind = ProxyTarget::Kind::kConnect;
    t.host = std::move(a.host);
    t.port = *a.port;
    return t;
  }
  // "http://" was checked by the head parser (case-insensitively).
  std::string_view rest = target.substr(7);
  size_t end = rest.find_first_of("/?");
  auto a = TRY(split_authority(rest.substr(0, end)));
  t.kind = ProxyTarget::Kind::kForward;
  t.host = std::move(a.host);
  t.port = a.port.value_or(80);
  std::string_view path = end == std::string_view::npos ? "" : rest.substr(end);
  t.origin_target = path.empty() || path[0] != '/' ? "/" + std::string(path) : std::string(path);
  return t;
}

std::string forward_request_head(const http::HttpRequest& req, const ProxyTarget& target,
                                 bool keep_alive) {
  std::string head = req.method + " " + target.origin_target + " HTTP/1." +
                     std::to_string(req.minor_version) + "\r\n";
  bool v6 = target.host.find(':') != std::string::npos;
  std::string host = v6 ? "[" + target.host + "]" : target.host;
  if (target.port != 80) host += ":" + std::to_string(target.port);
  head += "Host: " + host + "\r\n";
  for (const auto& [name, value] : req.headers.fields()) {
    if (http::iequals(name, "Host") || is_hop_by_hop(name, req.headers)) continue;
    head += name + ": " + value + "\r\n";
  }
  if (!keep_alive || !http::wants_keep_alive(req)) head += "Connection: close\r\n";
  return head + "\r\n";
}

}  // namespace carapace::egress
