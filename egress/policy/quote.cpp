#include "egress/policy/quote.h"

namespace carapace::egress {

std::string quoted(std::string_view text) {
  constexpr size_t kMaxShown = 128;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  if (text.size() > kMaxShown) out += "...";
  out += "'";
  return out;
}

}  // namespace carapace::egress
