// Small string helpers (there is no libc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace testguest {

inline bool str_equal(const char* a, const char* b) {
  while (*a && *a == *b)
    ++a, ++b;
  return *a == *b;
}

inline bool starts_with(const char* text, const char* prefix) {
  while (*prefix) {
    if (*text++ != *prefix++) return false;
  }
  return true;
}

inline bool bytes_equal(const char* a, const char* b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Writes `v` in decimal at `out` (at most 20 characters, no NUL); returns how many it wrote.
inline uint32_t write_decimal(char* out, uint64_t v) {
  char digits[20];
  uint32_t d = 0;
  do {
    digits[d++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  uint32_t n = 0;
  while (d)
    out[n++] = digits[--d];
  return n;
}

}  // namespace testguest
