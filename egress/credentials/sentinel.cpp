#include "egress/credentials/sentinel.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>

namespace carapace::egress {

Result<std::string> make_sentinel() {
  uint8_t bytes[kSentinelHexDigits / 2];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("getrandom for a credential sentinel");
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(kSentinelPrefix);
  for (uint8_t b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 0xf];
  }
  return out;
}

bool is_sentinel(std::string_view text) {
  if (text.size() != kSentinelSize || !text.starts_with(kSentinelPrefix)) return false;
  for (char c : text.substr(kSentinelPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace carapace::egress
