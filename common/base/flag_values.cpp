#include "common/base/flag_values.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace carapace {

Error flag_error(const std::string& msg) {
  return as_invalid_input(make_error(msg));
}

Result<uint64_t> parse_u64(const std::string& flag, const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return flag_error(flag + ": expected a non-negative integer, got '" + text + "'");
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE) return flag_error(flag + ": number too large: " + text);
  return static_cast<uint64_t>(v);
}

Result<double> parse_seconds(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v <= 0 || v > 1e7)
    return flag_error(flag + ": expected a positive number of seconds, got '" + text + "'");
  return v;
}

std::optional<uint64_t> decimal_u64(std::string_view text) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

Error choice_error(const std::string& flag, const std::vector<const char*>& words,
                   const std::string& text) {
  std::string expected;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) expected += i + 1 == words.size() ? " or " : ", ";
    expected += words[i];
  }
  return flag_error(flag + ": expected " + expected + ", got '" + text + "'");
}

Status for_each_flag_pair(
    const std::vector<std::string>& args, bool& help,
    const std::function<Status(const std::string& flag, const std::string& value)>& on_flag) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      help = true;
      continue;
    }
    if (i + 1 >= args.size()) return flag_error("unknown flag or missing value: '" + a + "'");
    TRY_STATUS(on_flag(a, args[++i]));
  }
  return {};
}

}  // namespace carapace
