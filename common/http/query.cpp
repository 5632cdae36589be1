#include "common/http/query.h"

#include "common/http/http_types.h"

namespace carapace::http {
Result<std::string> percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      int hi = i + 2 < s.size() ? hex_digit(s[i + 1]) : -1;
      int lo = i + 2 < s.size() ? hex_digit(s[i + 2]) : -1;
      if (hi < 0 || lo < 0) return as_invalid_input(make_error("invalid percent-encoding"));
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      c = ' ';
    }
    if (c == '\0') return as_invalid_input(make_error("NUL byte in percent-encoded text"));
    out.push_back(c);
  }
  return out;
}

std::string percent_encode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    bool unreserved = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

Result<QueryParams> QueryParams::parse(std::string_view query) {
  QueryParams q;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;  // "a=1&&b=2"
    size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    auto k = percent_decode(key, true);
    if (!k) return as_invalid_input(make_error("query: " + k.error().message));
    auto v = percent_decode(value, true);
    if (!v)
      return as_invalid_input(make_error("query parameter '" + *k + "': " + v.error().message));
    q.entries_.emplace_back(std::move(*k), std::move(*v));
  }
  return q;
}

std::optional<std::string_view> QueryParams::get(std::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k == key) return std::string_view(v);
  }
  return std::nullopt;
}

}  // namespace carapace::http
