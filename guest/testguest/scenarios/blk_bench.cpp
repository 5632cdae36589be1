// blk-bench: block I/O through the guest driver, timed with the PIT-calibrated TSC. On the first
// virtio-blk device (the host bench gives a filled image of at least 16 MiB):
//   rand4k-qd1   4 KiB reads at random 4 KiB-aligned offsets, one at a time (latency);
//   rand4k-qd32  the same with 32 in flight (IOPS);
//   seq128k-read 128 KiB reads in order with 8 in flight (MB/s);
//   seq128k-write 128 KiB writes in order with 8 in flight, then one FLUSH (MB/s).
// Each phase runs for testguest.bench.ms= milliseconds (default 500). One line per phase:
//   testguest: bench <phase> ops=N bytes=B ns=T iops=I mbps=M lat_ns=L notifies=K
#include "guest/testguest/cmdline.h"
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenario.h"
#include "guest/testguest/timing.h"
#include "guest/testguest/virtio/blk.h"
#include "guest/testguest/virtio/dma.h"

namespace testguest {
namespace {

using namespace virtio;

constexpr uint32_t kMaxDepth = 32;
constexpr uint32_t kMaxBlock = 128 * 1024;

struct Phase {
  const char* name;
  uint32_t type;
  uint32_t block;
  uint32_t depth;
  bool random;
};

uint64_t next_random(uint64_t& state) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return state >> 33;
}

const char* run_phase(BlkDriver& blk, const Phase& p, uint8_t* buffers, uint64_t tsc_hz,
                      uint64_t duration_cycles) {
  const uint64_t blocks = blk.capacity * kSector / p.block;
  if (blocks < 2) return "disk too small for the benchmark";
  uint64_t rng = 0x243f6a8885a308d3ull, next_seq = 0;
  auto next_sector = [&]() -> uint64_t {
    const uint64_t b = p.random ? next_random(rng) % blocks : next_seq++ % blocks;
    return b * (p.block / kSector);
  };
  uint8_t* slot_buf[kMaxDepth];
  static int tag_slot[Virtqueue::kMaxSize];
  uint64_t started_at[kMaxDepth];
  uint64_t ops = 0, latency_sum = 0;
  const uint64_t notifies_before = blk.vq.notifies();
  const uint64_t start = rdtsc();
  const uint64_t stop = start + duration_cycles;
  uint32_t in_flight = 0;
  auto submit = [&](uint32_t slot) -> bool {
    const int tag = blk.start(p.type, next_sector(), slot_buf[slot], p.block);
    if (tag < 0) return false;
    tag_slot[tag] = static_cast<int>(slot);
    started_at[slot] = rdtsc();
    ++in_flight;
    return true;
  };
  for (uint32_t i = 0; i < p.depth; ++i) {
    slot_buf[i] = buffers + uint64_t{i} * kMaxBlock;
    if (!submit(i)) return "queue too small for the benchmark depth";
  }
  blk.kick();
  Deadline watchdog(duration_cycles + 10 * tsc_hz);
  while (in_flight) {
    int tag;
    uint8_t status;
    uint32_t len;
    bool resubmitted = false;
    while (blk.poll(tag, status, len)) {
      if (status != kBlkOk) return "a benchmark request failed";
      const uint32_t slot = static_cast<uint32_t>(tag_slot[tag]);
      const uint64_t now = rdtsc();
      latency_sum += now - started_at[slot];
      ++ops;
      --in_flight;
      if (now < stop) resubmitted |= submit(slot);
    }
    if (resubmitted) blk.kick();
    if (watchdog.expired()) return "benchmark requests stopped completing";
    cpu_relax();
  }
  if (p.type == kBlkOut && blk.request(kBlkFlush, 0, nullptr, 0) != kBlkOk) return "flush failed";
  const uint64_t ns = cycles_to_ns(rdtsc() - start, tsc_hz);
  const uint64_t bytes = ops * p.block;
  out << "testguest: bench " << p.name << " ops=" << dec(ops) << " bytes=" << dec(bytes)
      << " ns=" << dec(ns) << " iops=" << dec(ops * 1000000000ull / ns)
      << " mbps=" << dec(bytes * 1000ull / ns)
      << " lat_ns=" << dec(ops ? cycles_to_ns(latency_sum / ops, tsc_hz) : 0)
      << " notifies=" << dec(blk.vq.notifies() - notifies_before) << "\n";
  return nullptr;
}

}  // namespace

ScenarioResult run_blk_bench(const BootInfo& boot) {
  DeviceList list;
  const DeviceInfo* info;
  if (const char* e = start_virtio_device(boot, list, kTypeBlock, info)) return e;
  const uint64_t tsc_hz = calibrate_tsc_hz();
  if (tsc_hz == 0) return "TSC calibration failed (the PIT does not count)";
  const bool event_idx = !cmdline_has_word(boot.cmdline, "testguest.bench.no-event-idx");
  static BlkDriver blk;
  if (const char* e = blk.init(*info, 128, event_idx)) return e;
  if (blk.read_only()) return "the benchmark disk must be writable";
  const uint64_t ms = cmdline_u64(boot.cmdline, "testguest.bench.ms=", 500);
  out << "testguest: bench tsc_hz=" << dec(tsc_hz) << " capacity=" << dec(blk.capacity)
      << " queue=" << dec(blk.vq.size()) << " event_idx=" << dec(event_idx ? 1 : 0)
      << " ms=" << dec(ms) << "\n";
  auto* buffers = static_cast<uint8_t*>(dma_alloc(uint64_t{kMaxDepth} * kMaxBlock, 4096));
  if (!buffers) return "out of DMA memory";
  const Phase phases[] = {
      {"rand4k-qd1", kBlkIn, 4096, 1, true},
      {"rand4k-qd32", kBlkIn, 4096, 32, true},
      {"seq128k-read", kBlkIn, 128 * 1024, 8, false},
      {"seq128k-write", kBlkOut, 128 * 1024, 8, false},
  };
  for (const Phase& p : phases) {
    if (const char* e = run_phase(blk, p, buffers, tsc_hz, tsc_hz / 1000 * ms)) return e;
  }
  blk.dev.reset();
  return nullptr;
}

}  // namespace testguest
