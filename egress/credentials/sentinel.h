// The stand-in a sandbox sees instead of a credential's secret: "carapace-cred-" and 32 lower-case
// hex digits (128 random bits), a fresh one per sandbox and per credential. It is worthless
// outside that sandbox's proxy, which swaps it for the secret only on the credential's own hosts,
// so a program that leaks its environment leaks nothing a stranger can use.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/base/result.h"

namespace carapace::egress {

inline constexpr std::string_view kSentinelPrefix = "carapace-cred-";
inline constexpr size_t kSentinelHexDigits = 32;
inline constexpr size_t kSentinelSize = kSentinelPrefix.size() + kSentinelHexDigits;

// 16 bytes of getrandom(2) (blocking until the pool is ready, retried on EINTR). A host error
// only when the kernel gives none.
Result<std::string> make_sentinel();

// Whether `text` is exactly a sentinel's shape: the prefix and 32 lower-case hex digits.
bool is_sentinel(std::string_view text);

}  // namespace carapace::egress
