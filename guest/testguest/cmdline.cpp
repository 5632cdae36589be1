#include "guest/testguest/cmdline.h"

#include "guest/testguest/text.h"

namespace testguest {
namespace {

// Calls visit(word, length) for each word until it returns true; returns whether one did.
template <typename Visit>
bool for_each_word(const char* cmdline, Visit visit) {
  if (!cmdline) return false;
  size_t i = 0;
  while (i < kCmdlineMax && cmdline[i]) {
    while (i < kCmdlineMax && is_space(cmdline[i]))
      ++i;
    size_t start = i;
    while (i < kCmdlineMax && cmdline[i] && !is_space(cmdline[i]))
      ++i;
    if (i > start && visit(cmdline + start, i - start)) return true;
  }
  return false;
}

bool word_starts_with(const char* word, size_t length, const char* prefix) {
  size_t n = 0;
  for (; prefix[n]; ++n) {
    if (n >= length || word[n] != prefix[n]) return false;
  }
  return true;
}

size_t length_of(const char* text) {
  size_t n = 0;
  while (text[n])
    ++n;
  return n;
}

}  // namespace

bool cmdline_value(const char* cmdline, const char* key, char* value, size_t value_size) {
  const size_t key_length = length_of(key);
  return for_each_word(cmdline, [&](const char* word, size_t length) {
    if (!word_starts_with(word, length, key)) return false;
    size_t n = 0;
    for (size_t i = key_length; i < length && n + 1 < value_size; ++i)
      value[n++] = word[i];
    value[n] = '\0';
    return true;
  });
}

bool cmdline_has_word(const char* cmdline, const char* word) {
  const size_t word_length = length_of(word);
  return for_each_word(cmdline, [&](const char* candidate, size_t length) {
    return length == word_length && word_starts_with(candidate, length, word);
  });
}

uint64_t cmdline_u64(const char* cmdline, const char* key, uint64_t fallback) {
  char value[24];
  if (!cmdline_value(cmdline, key, value, sizeof value) || value[0] < '0' || value[0] > '9')
    return fallback;
  uint64_t n = 0;
  for (const char* p = value; *p >= '0' && *p <= '9'; ++p)
    n = n * 10 + static_cast<uint64_t>(*p - '0');
  return n;
}

}  // namespace testguest
