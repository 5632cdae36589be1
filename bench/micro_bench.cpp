// Google Benchmark microbenchmarks of the VMM's hot host-side paths.
#include <benchmark/benchmark.h>

#include "vmm/boot/mptable.h"
#include "vmm/devices/serial/serial.h"
#include "vmm/kvm/cpuid.h"
#include "vmm/memory/guest_memory.h"
#include "vmm/memory/ram_layout.h"
#include "vmm/virtio/descriptor_chain.h"
#include "vmm/virtio/queue.h"
// The driver's half of a split virtqueue in fake guest memory (header-only test helper).
#include "tests/unit/virtio/test_ring.h"

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

// ---- virtqueue ("5. Bench") ----

// A 256-entry queue whose descriptor table holds 256 / `per_chain` chains of `per_chain`
// descriptors (readable ones, then one writable: a block request's shape), 512-byte buffers.
struct QueueRig {
  GuestMemory mem = virtio::fake::make_memory();
  virtio::fake::TestRing ring{mem, 256};
  std::vector<uint16_t> heads;

  explicit QueueRig(uint16_t per_chain) {
    for (uint16_t head = 0; head + per_chain <= 256; head += per_chain) {
      for (uint16_t k = 0; k < per_chain; ++k) {
        const uint16_t i = head + k;
        const bool last = k + 1 == per_chain;
        const uint16_t flags = (last ? virtio::kDescFWrite : 0) | (last ? 0 : virtio::kDescFNext);
        ring.set_desc(i, virtio::fake::kBufferBase + 512ull * i, 512, flags,
                      static_cast<uint16_t>(i + 1));
      }
      heads.push_back(head);
    }
  }
};

// What every device does per request: pop() (avail ring read, whole-chain validation) and
// add_used() (used element, release-ordered used.idx). Each round the fake driver publishes a
// batch of chains (two guest-memory writes each, included in the time) and the device drains it.
void BM_QueuePopAddUsed(benchmark::State& state) {
  QueueRig rig(static_cast<uint16_t>(state.range(0)));
  virtio::Queue q = rig.ring.activate(256);
  uint64_t chains = 0;
  for (auto _ : state) {
    for (uint16_t head : rig.heads)
      rig.ring.publish(head);
    for (;;) {
      auto c = q.pop();
      if (!c.ok() || !c->has_value()) break;
      benchmark::DoNotOptimize((*c)->readable_bytes());
      (void)q.add_used((*c)->head(), 0);
      ++chains;
    }
  }
  if (chains != uint64_t(state.iterations()) * rig.heads.size()) state.SkipWithError("lost chains");
  state.SetItemsProcessed(static_cast<int64_t>(chains));
  state.counters["ns_per_chain"] = benchmark::Counter(
      static_cast<double>(chains), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_QueuePopAddUsed)->ArgName("descs_per_chain")->Arg(1)->Arg(3);

// DescriptorChain::parse alone: walking and validating one chain of `range(0)` descriptors (every
// buffer bounds-checked against RAM, lengths summed with overflow checks, direction order).
void BM_ChainParse(benchmark::State& state) {
  const uint16_t n = static_cast<uint16_t>(state.range(0));
  QueueRig rig(n);
  auto table = std::move(rig.mem.slice(GuestAddress(virtio::fake::kDescAddr), 16 * 256)).value();
  for (auto _ : state) {
    auto chain = virtio::DescriptorChain::parse(rig.mem, table, 256, 0, true);
    benchmark::DoNotOptimize(chain);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ChainParse)->ArgName("descs")->Arg(1)->Arg(3)->Arg(16);

// The same 3-descriptor request behind an indirect table (what Linux uses for multi-buffer
// requests when VIRTIO_RING_F_INDIRECT_DESC is negotiated).
void BM_ChainParseIndirect(benchmark::State& state) {
  QueueRig rig(1);
  constexpr uint64_t kIndirect = 0x60000;
  for (uint16_t k = 0; k < 3; ++k)
    rig.ring.set_desc_at(kIndirect, k, virtio::fake::kBufferBase + 512ull * k, 512,
                         k == 2 ? virtio::kDescFWrite : virtio::kDescFNext,
                         static_cast<uint16_t>(k + 1));
  rig.ring.set_desc(0, kIndirect, 48, virtio::kDescFIndirect);
  auto table = std::move(rig.mem.slice(GuestAddress(virtio::fake::kDescAddr), 16 * 256)).value();
  for (auto _ : state) {
    auto chain = virtio::DescriptorChain::parse(rig.mem, table, 256, 0, true);
    if (!chain.ok()) state.SkipWithError("indirect chain refused");
    benchmark::DoNotOptimize(chain);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ChainParseIndirect);

}  // namespace
}  // namespace carapace
