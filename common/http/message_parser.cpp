#include "common/http/message_parser.h"

#include <array>
#include <charconv>

namespace carapace::http {
namespace {

constexpr std::array<std::string_view, 9> kKnownMethods = {
    "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT"};
constexpr size_t kMaxMethodLength = 32;

Rejection bad_request(std::string message) {
  return Rejection{400, std::move(message)};
}

// Splits off the next CRLF-terminated line. Every line of a head ends in CRLF (read_head
// guarantees the last one does).
std::string_view next_line(std::string_view& rest) {
  size_t crlf = rest.find("\r\n");
  std::string_view line = rest.substr(0, crlf);
  rest = crlf == std::string_view::npos ? std::string_view() : rest.substr(crlf + 2);
  return line;
}

// field-value: visible ASCII, obs-text, SP and HTAB; no other control byte (CR, LF, NUL).
bool valid_field_value(std::string_view v) {
  for (unsigned char c : v) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

// Parses "Name: value" lines into `out`. Returns an error message, or "" on success;
// *too_many is set when the count passed max_headers.
std::string parse_fields(std::string_view rest, size_t max_headers, HttpHeaders& out,
                         bool* too_many) {
  *too_many = false;
  while (!rest.empty()) {
    std::string_view line = next_line(rest);
    if (line.empty()) return "empty header line";
    // Obsolete line folding is refused (RFC 9112 5.2), never unfolded.
    if (line[0] == ' ' || line[0] == '\t') return "obsolete header line folding";
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return "header line without ':'";
    std::string_view name = line.substr(0, colon);
    // No whitespace between name and colon (RFC 9112 5.1): is_token refuses it.
    if (!is_token(name)) return "invalid header name";
    std::string_view value = trim_ows(line.substr(colon + 1));
    if (!valid_field_value(value)) return "control character in header value";
    if (out.size() >= max_headers) {
      *too_many = true;
      return "too many header fields";
    }
    out.add(std::string(name), std::string(value));
  }
  return "";
}

// "HTTP/1.0" or "HTTP/1.1" -> minor version, else -1.
int parse_version(std::string_view v) {
  if (v == "HTTP/1.1") return 1;
  if (v == "HTTP/1.0") return 0;
  return -1;
}

bool parse_decimal(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Shared by request and response framing: returns an error message or "".
std::string parse_framing(const HttpHeaders& h, BodyFraming& out, bool* unsupported_coding) {
  *unsupported_coding = false;
  size_t te = h.count("Transfer-Encoding");
  size_t cl = h.count("Content-Length");
  if (te > 0) {
    if (cl > 0) return "both Transfer-Encoding and Content-Length";
    auto v = h.get("Transfer-Encoding");
    if (te > 1 || !iequals(trim_ows(*v), "chunked")) {
      *unsupported_coding = true;
      return "unsupported Transfer-Encoding";
    }
    out.kind = BodyFraming::kChunked;
    return "";
  }
  if (cl > 1) return "more than one Content-Length";
  if (cl == 1) {
    if (!parse_decimal(*h.get("Content-Length"), out.length)) return "invalid Content-Length";
    out.kind = out.length == 0 ? BodyFraming::kNone : BodyFraming::kLength;
    return "";
  }
  out.kind = BodyFraming::kNone;
  return "";
}

}  // namespace

std::optional<Rejection> parse_request_head(std::string_view head, size_t max_headers,
                                            HttpRequest& out, TargetForms forms) {
  std::string_view rest = head;
  std::string_view line = next_line(rest);
  // Bare CR or LF anywhere in the head is refused: they are how one message hides in another.
  if (line.find_first_of("\r\n") != std::string_view::npos) return bad_request("bare CR or LF");

  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return bad_request("malformed request line");
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);

  if (!is_token(method) || method.size() > kMaxMethodLength) return bad_request("malformed method");
  int minor = parse_version(version);
  if (minor < 0) return bad_request("unsupported HTTP version (HTTP/1.0 and HTTP/1.1 only)");
  if (forms == TargetForms::kOrigin) {
    // Origin form only: this server is no proxy (absolute form) and has no "*" resource.
    if (target.empty() || target[0] != '/') return bad_request("request target must start with /");
  } else if (method == "CONNECT") {
    if (target.empty() || target.find_first_of("/?@") != std::string_view::npos)
      return bad_request("CONNECT needs an authority-form target (host:port)");
  } else if (target.size() < 8 || !iequals(target.substr(0, 7), "http://")) {
    return bad_request(target.size() >= 8 && iequals(target.substr(0, 8), "https://")
                           ? "https:// through this proxy needs CONNECT"
                           : "a proxy request needs an absolute http:// target");
  }
  for (unsigned char c : target) {
    if (c <= 0x20 || c >= 0x7f) return bad_request("invalid byte in request target");
  }
  if (target.find('#') != std::string_view::npos) return bad_request("fragment in request target");

  bool too_many = false;
  std::string err = parse_fields(rest, max_headers, out.headers, &too_many);
  if (too_many) return Rejection{431, err};
  if (!err.empty()) return bad_request(err);
  // RFC 9112 3.2: more than one Host is an error; a missing one is tolerated on a Unix socket
  // (the TCP listener checks it separately).
  if (out.headers.count("Host") > 1) return bad_request("more than one Host header");

  bool known = false;
  for (auto m : kKnownMethods)
    known = known || m == method;
  if (!known) return Rejection{501, "method not implemented"};

  out.method = std::string(method);
  out.target = std::string(target);
  out.minor_version = minor;
  if (forms == TargetForms::kProxy) return std::nullopt;
  size_t q = target.find('?');
  out.path = std::string(target.substr(0, q));
  out.query_string = q == std::string_view::npos ? "" : std::string(target.substr(q + 1));
  return std::nullopt;
}

Result<StatusLine> parse_response_head(std::string_view head, size_t max_headers,
                                       HttpHeaders& out) {
  std::string_view rest = head;
  std::string_view line = next_line(rest);
  if (line.find_first_of("\r\n") != std::string_view::npos) return make_error("bare CR or LF");
  // "HTTP/1.1 200 OK": version, SP, three digits, SP, optional reason.
  if (line.size() < 12 || line[8] != ' ' || (line.size() > 12 && line[12] != ' '))
    return make_error("malformed status line");
  StatusLine s;
  s.minor_version = parse_version(line.substr(0, 8));
  if (s.minor_version < 0) return make_error("unsupported HTTP version in response");
  auto code = line.substr(9, 3);
  auto [p, ec] = std::from_chars(code.data(), code.data() + 3, s.status);
  if (ec != std::errc() || p != code.data() + 3 || s.status < 100 || s.status > 599)
    return make_error("malformed status code");
  bool too_many = false;
  std::string err = parse_fields(rest, max_headers, out, &too_many);
  if (!err.empty()) return make_error("response: " + err);
  return s;
}

std::optional<Rejection> request_framing(const HttpRequest& req, BodyFraming& out) {
  if (req.minor_version == 0 && req.headers.has("Transfer-Encoding"))
    return bad_request("Transfer-Encoding in an HTTP/1.0 request");
  bool unsupported = false;
  std::string err = parse_framing(req.headers, out, &unsupported);
  if (unsupported) return Rejection{501, err};
  if (!err.empty()) return bad_request(err);
  return std::nullopt;
}

Result<BodyFraming> response_framing(std::string_view method, int status,
                                     const HttpHeaders& headers) {
  BodyFraming f;
  if (method == "HEAD" || status < 200 || status == 204 || status == 304) return f;
  bool unsupported = false;
  std::string err = parse_framing(headers, f, &unsupported);
  if (!err.empty()) return make_error("response: " + err);
  if (!headers.has("Content-Length") && f.kind == BodyFraming::kNone)
    f.kind = BodyFraming::kUntilClose;
  return f;
}

bool wants_keep_alive(const HttpRequest& req) {
  if (req.headers.has_token("Connection", "close")) return false;
  if (req.minor_version == 0) return req.headers.has_token("Connection", "keep-alive");
  return true;
}

bool host_is_loopback(const HttpHeaders& headers) {
  auto host = headers.get("Host");
  if (!host) return false;
  std::string_view h = *host;
  // Strip ":port" (digits only) but keep "[::1]".
  size_t colon = h.rfind(':');
  if (colon != std::string_view::npos && h.find(']') == std::string_view::npos) {
    std::string_view port = h.substr(colon + 1);
    if (port.empty() || port.find_first_not_of("0123456789") != std::string_view::npos)
      return false;
    h = h.substr(0, colon);
  } else if (!h.empty() && h[0] == '[') {
    size_t bracket = h.find(']');
    if (bracket == std::string_view::npos) return false;
    std::string_view after = h.substr(bracket + 1);
    if (!after.empty() &&
        (after[0] != ':' || after.size() == 1 ||
         after.substr(1).find_first_not_of("0123456789") != std::string_view::npos))
      return false;
    h = h.substr(0, bracket + 1);
  }
  return iequals(h, "localhost") || h == "127.0.0.1" || h == "[::1]";
}

}  // namespace carapace::http
