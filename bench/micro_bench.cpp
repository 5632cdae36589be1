// Google Benchmark microbenchmarks of the VMM's hot host-side paths.
#include <benchmark/benchmark.h>

#include "vmm/boot/mptable.h"
#include "vmm/devices/serial/serial.h"
#include "vmm/kvm/cpuid.h"
#include "vmm/memory/guest_memory.h"
#include "vmm/memory/ram_layout.h"

namespace carapace {
namespace {

GuestMemory make_memory(uint64_t bytes) {
  return std::move(GuestMemory::create_anonymous(*ram_regions(bytes))).value();
}

// The checked access every device makes for every descriptor.
void BM_GuestMemoryReadObj(benchmark::State& state) {
  auto mem = make_memory(64 << 20);
  uint64_t addr = 0x100000;
  for (auto _ : state) {
    auto v = mem.read_obj<uint64_t>(GuestAddress(addr));
    benchmark::DoNotOptimize(v);
    addr = (addr + 4096) & ((32 << 20) - 1);
  }
}
BENCHMARK(BM_GuestMemoryReadObj);

void BM_GuestMemorySliceRefused(benchmark::State& state) {
  auto mem = make_memory(64 << 20);
  for (auto _ : state) {
    auto s = mem.slice(GuestAddress(UINT64_MAX - 8), 16);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_GuestMemorySliceRefused);

void BM_NormalizeCpuid(benchmark::State& state) {
  std::vector<kvm_cpuid_entry2> entries(56);
  for (uint32_t i = 0; i < entries.size(); ++i)
    entries[i].function = i < 14 ? i : 0x80000000 + i;
  CpuidTable table(entries);
  for (auto _ : state) {
    auto t = normalize_cpuid(table, 1, 4, CpuTemplate::kBaseline);
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_NormalizeCpuid);

void BM_WriteMptable(benchmark::State& state) {
  auto mem = make_memory(16 << 20);
  for (auto _ : state)
    benchmark::DoNotOptimize(write_mptable(mem, state.range(0)).ok());
}
BENCHMARK(BM_WriteMptable)->Arg(1)->Arg(64);

// One guest byte through the UART to a discarding console: the cost of a serial port exit's
// device half.
void BM_SerialTransmitByte(benchmark::State& state) {
  ConsoleSink sink(-1, false);
  Serial serial(&sink, nullptr);
  const uint8_t byte = 'x';
  for (auto _ : state)
    serial.write(0, {&byte, 1});
}
BENCHMARK(BM_SerialTransmitByte);

}  // namespace
}  // namespace carapace
