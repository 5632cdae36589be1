// memory: writes an address-derived pattern to all RAM above 1 MiB except the guest image (which
// holds the code, stacks and page tables), then reads it all back. Runs at CPL3, natively. RAM
// above 4 GiB is mapped first (paging.cpp).
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/image.h"
#include "guest/testguest/paging.h"
#include "guest/testguest/scenario.h"

namespace testguest {
namespace {

constexpr uint64_t kLowLimit = 1ull << 20;  // below 1 MiB: BIOS areas, boot structures, trampoline
constexpr uint64_t kPage = 4096;
constexpr uint64_t k4GiB = 4ull << 30;

// Distinct for every 8-byte word, so a page that aliases another (two guest addresses backed by one
// host page) or a shifted mapping shows up as a mismatch.
inline uint64_t pattern(uint64_t addr) {
  return addr * 0x9e3779b97f4a7c15ull ^ 0x5a5a5a5a5a5a5a5aull;
}

struct Span {
  uint64_t start;
  uint64_t end;
};

// The testable parts of one RAM range: page-aligned, above 1 MiB, minus the image. At most two.
int testable_spans(const MemRange& range, Span spans[2]) {
  uint64_t start = (range.addr + kPage - 1) & ~(kPage - 1);
  uint64_t end = (range.addr + range.size) & ~(kPage - 1);
  if (start < kLowLimit) start = kLowLimit;
  if (end > kMappableEnd) end = kMappableEnd;
  if (start >= end) return 0;
  int n = 0;
  if (start < image_start()) spans[n++] = {start, end < image_start() ? end : image_start()};
  if (end > image_end()) spans[n++] = {start > image_end() ? start : image_end(), end};
  return n;
}

void fill(Span span) {
  for (uint64_t addr = span.start; addr < span.end; addr += 8) {
    *reinterpret_cast<uint64_t*>(addr) = pattern(addr);
  }
}

// Returns the number of mismatching words; prints the first one.
uint64_t verify(Span span) {
  uint64_t bad = 0;
  for (uint64_t addr = span.start; addr < span.end; addr += 8) {
    const uint64_t value = *reinterpret_cast<const uint64_t*>(addr);
    if (value != pattern(addr)) {
      if (bad++ == 0) {
        out << "testguest: memory mismatch at " << hex(addr) << ": read " << hex(value)
            << " expected " << hex(pattern(addr)) << "\n";
      }
    }
  }
  return bad;
}

}  // namespace

ScenarioResult run_memory(const BootInfo& boot) {
  if (ScenarioResult mapped = map_ram_above_4g(boot.memory)) return mapped;

  Span spans[2 * kMaxMemRanges];
  int span_count = 0;
  uint64_t bytes = 0;
  uint64_t bytes_above_4g = 0;
  for (uint32_t i = 0; i < boot.memory.count; ++i) {
    if (boot.memory.ranges[i].type != kMemRam) continue;
    const int n = testable_spans(boot.memory.ranges[i], spans + span_count);
    for (int j = 0; j < n; ++j) {
      const Span& s = spans[span_count + j];
      bytes += s.end - s.start;
      if (s.end > k4GiB) bytes_above_4g += s.end - (s.start > k4GiB ? s.start : k4GiB);
    }
    span_count += n;
  }
  if (bytes == 0) return "no RAM above 1 MiB outside the guest image";

  const uint64_t begin = rdtsc();
  for (int i = 0; i < span_count; ++i)
    fill(spans[i]);
  compiler_barrier();  // read memory back, not the values just computed
  const uint64_t filled = rdtsc();
  uint64_t bad = 0;
  for (int i = 0; i < span_count; ++i)
    bad += verify(spans[i]);
  const uint64_t verified = rdtsc();

  out << "testguest: memory tested " << dec(bytes >> 20) << " MiB (" << dec(bytes_above_4g >> 20)
      << " MiB above 4 GiB) in " << dec(span_count) << " spans; TSC cycles: fill "
      << dec((filled - begin) >> 20) << " Mi, verify " << dec((verified - filled) >> 20) << " Mi\n";
  if (bad) {
    out << "testguest: memory " << dec(bad) << " bad words\n";
    return "memory pattern mismatch";
  }
  return nullptr;
}

}  // namespace testguest
