// The four functions GCC may emit calls to even in freestanding code (struct copies, zeroing).
// Built with -fno-tree-loop-distribute-patterns so these loops are not turned back into calls.
#include <cstddef>
#include <cstdint>

extern "C" {

void* memcpy(void* dest, const void* src, size_t n) {
  auto* d = static_cast<unsigned char*>(dest);
  auto* s = static_cast<const unsigned char*>(src);
  while (n--)
    *d++ = *s++;
  return dest;
}

void* memmove(void* dest, const void* src, size_t n) {
  auto* d = static_cast<unsigned char*>(dest);
  auto* s = static_cast<const unsigned char*>(src);
  if (d < s) {
    while (n--)
      *d++ = *s++;
  } else {
    while (n--)
      d[n] = s[n];
  }
  return dest;
}

void* memset(void* dest, int value, size_t n) {
  auto* d = static_cast<unsigned char*>(dest);
  while (n--)
    *d++ = static_cast<unsigned char>(value);
  return dest;
}

int memcmp(const void* a, const void* b, size_t n) {
  auto* x = static_cast<const unsigned char*>(a);
  auto* y = static_cast<const unsigned char*>(b);
  for (; n; --n, ++x, ++y) {
    if (*x != *y) return *x < *y ? -1 : 1;
  }
  return 0;
}

}  // extern "C"
