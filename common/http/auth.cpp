#include "common/http/auth.h"

#include <cstddef>

namespace carapace::http {

bool constant_time_equals(std::string_view given, std::string_view expected) {
  // volatile keeps the compiler from ending the loop at the first difference.
  volatile unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff = diff | (g ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

bool bearer_token_matches(const HttpHeaders& headers, std::string_view expected) {
  if (expected.empty() || headers.count("Authorization") != 1) return false;
  std::string_view v = *headers.get("Authorization");
  constexpr std::string_view kScheme = "Bearer ";
  if (v.size() < kScheme.size() || !iequals(v.substr(0, kScheme.size()), kScheme)) return false;
  v.remove_prefix(kScheme.size());
  while (!v.empty() && v.front() == ' ')
    v.remove_prefix(1);
  return constant_time_equals(v, expected);
}

}  // namespace carapace::http
