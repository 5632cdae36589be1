// Percent-decoding and query strings. Everything here comes straight from a client, so a bad
// escape or a decoded NUL (which would cut a path short in any C API) is an error, not a guess.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/result.h"

namespace carapace::http {

// Decodes %XX escapes. `plus_is_space` follows the form encoding used in query strings.
// Fails (kInvalidInput) on a truncated or non-hex escape and on a decoded NUL.
Result<std::string> percent_decode(std::string_view s, bool plus_is_space);

// Encodes every byte outside RFC 3986 "unreserved" (for building targets in clients and tests).
std::string percent_encode(std::string_view s);

// `a=1&b=x%20y&flag`: decoded pairs in order; a key without '=' has an empty value.
class QueryParams {
 public:
  static Result<QueryParams> parse(std::string_view query);

  // The first value for `key`.
  std::optional<std::string_view> get(std::string_view key) const;
  bool has(std::string_view key) const { return get(key).has_value(); }
  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

}  // namespace carapace::http
