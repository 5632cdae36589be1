// Client- and operator-written text inside a one-line error or log message.
#pragma once

#include <string>
#include <string_view>

namespace carapace::egress {

// 'text' in single quotes, every byte outside printable ASCII (and the quote and backslash) as
// \xNN, cut to the first 128 bytes with "..." so one hostile name cannot make a long line.
std::string quoted(std::string_view text);

}  // namespace carapace::egress
