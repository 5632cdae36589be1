// Small string helpers (there is no libc).
#pragma once

#include <cstddef>

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

}  // namespace testguest
