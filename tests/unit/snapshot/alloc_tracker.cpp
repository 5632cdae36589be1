#include "tests/unit/snapshot/alloc_tracker.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<size_t> g_largest{0};

void* tracked_alloc(size_t n) {
  size_t prev = g_largest.load(std::memory_order_relaxed);
  while (n > prev && !g_largest.compare_exchange_weak(prev, n, std::memory_order_relaxed)) {
  }
  return std::malloc(n == 0 ? 1 : n);
}
}  // namespace

namespace carapace::testing {
void reset_largest_allocation() {
  g_largest.store(0);
}
size_t largest_allocation() {
  return g_largest.load();
}
}  // namespace carapace::testing

// Plain malloc/free underneath, so ASan still sees every allocation and free.
void* operator new(size_t n) {
  if (void* p = tracked_alloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) {
  if (void* p = tracked_alloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  return tracked_alloc(n);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  return tracked_alloc(n);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t) noexcept {
  std::free(p);
}
