// Numeric flag values, parsed the same way by every command: each refusal is one line naming the
// flag and why.
#pragma once

#include <cstdint>
#include <string>

#include "common/base/result.h"

namespace carapace {

// Plain decimal, no sign, no trailing junk, no overflow.
Result<uint64_t> parse_u64(const std::string& flag, const std::string& text);
// A positive, finite number of seconds, at most 10^7.
Result<double> parse_seconds(const std::string& flag, const std::string& text);

}  // namespace carapace
