#include "common/agent/base64.h"

#include <array>
#include <cstdint>

namespace carapace::agent {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> make_reverse() {
  std::array<int8_t, 256> r{};
  for (auto& v : r)
    v = -1;
  for (int i = 0; i < 64; ++i)
    r[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  return r;
}
constexpr auto kReverse = make_reverse();

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = uint32_t{static_cast<unsigned char>(bytes[i])} << 16 |
                 uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8 |
                 uint32_t{static_cast<unsigned char>(bytes[i + 2])};
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{static_cast<unsigned char>(bytes[i])} << 16;
    if (rest == 2) v |= uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8;
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::optional<size_t> base64_decoded_size(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  size_t pad = 0;
  if (!text.empty() && text.back() == '=') ++pad;
  if (text.size() >= 2 && text[text.size() - 2] == '=') ++pad;
  return text.size() / 4 * 3 - pad;
}

std::optional<std::string> base64_decode(std::string_view text) {
  auto size = base64_decoded_size(text);
  if (!size) return std::nullopt;
  size_t pad = text.size() / 4 * 3 - *size;
  std::string out;
  out.reserve(*size);
  for (size_t i = 0; i < text.size(); i += 4) {
    bool last = i + 4 == text.size();
    uint32_t v = 0;
    for (size_t j = 0; j < 4; ++j) {
      char c = text[i + j];
      int d = kReverse[static_cast<unsigned char>(c)];
      if (c == '=' && last && j >= 4 - pad) d = 0;
      if (d < 0) return std::nullopt;
      v = v << 6 | static_cast<uint32_t>(d);
    }
    out.push_back(static_cast<char>(v >> 16));
    if (!(last && pad == 2)) out.push_back(static_cast<char>((v >> 8) & 0xff));
    if (!(last && pad >= 1)) out.push_back(static_cast<char>(v & 0xff));
  }
  return out;
}

}  // namespace carapace::agent
