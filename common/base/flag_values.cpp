#include "common/base/flag_values.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace carapace {

namespace {
Error bad(const std::string& msg) {
  return as_invalid_input(make_error(msg));
}
}  // namespace

Result<uint64_t> parse_u64(const std::string& flag, const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return bad(flag + ": expected a non-negative integer, got '" + text + "'");
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) return bad(flag + ": number too large: " + text);
  return static_cast<uint64_t>(v);
}

Result<double> parse_seconds(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v <= 0 || v > 1e7)
    return bad(flag + ": expected a positive number of seconds, got '" + text + "'");
  return v;
}

}  // namespace carapace
