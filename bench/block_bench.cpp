// virtio-blk driven host-side: requests built in fake guest memory, served through
// VirtioBlock::queue_notify() as the event loop would, io_uring and synchronous backends in the
// same run. The image (128 MiB) is written once and then sits in the page cache, so these
// numbers are the device's own cost (parsing, syscalls, io_uring round trips, copies), not the
// disk's. Through-the-guest numbers come from the test guest.
//
//   build/bench/block_bench --benchmark_counters_tabular=true
//
// Arguments: backend (0 = sync, 1 = io_uring), queue depth (requests in flight per notify).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <linux/virtio_blk.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/base/log.h"
#include "vmm/devices/block/disk_image.h"
#include "vmm/devices/block/virtio_block.h"
#include "vmm/virtio/ring_layout.h"

namespace carapace {
namespace {

using namespace virtio;

constexpr uint64_t kImageSize = 128ull << 20;
constexpr uint16_t kQueue = 256;
constexpr uint64_t kDesc = 0x10000, kAvail = 0x20000, kUsed = 0x30000;
constexpr uint64_t kHeaders = 0x40000, kStatus = 0x50000;
constexpr uint64_t kData = 1 << 20;  // up to 64 requests of 256 KiB

class NullSignals : public DeviceSignals {
 public:
  void signal_used(uint16_t) override {}
  void signal_config_change() override {}
  void report_needs_reset(const Error&) override {}
};

// The image, written once per process and removed at exit.
const std::string& image_path() {
  static const std::string path = [] {
    set_log_level(LogLevel::kError);
    std::string p = "/tmp/carapace-block-bench-" + std::to_string(::getpid()) + ".img";
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::vector<uint8_t> chunk(1 << 20);
    for (size_t i = 0; i < chunk.size(); ++i)
      chunk[i] = static_cast<uint8_t>(i * 13);
    for (uint64_t off = 0; off < kImageSize; off += chunk.size())
      if (::pwrite(fd, chunk.data(), chunk.size(), static_cast<off_t>(off)) < 0) std::abort();
    ::fsync(fd);
    ::close(fd);
    std::atexit([] { ::unlink(image_path().c_str()); });
    return p;
  }();
  return path;
}

// A guest driver: one ring of 256 entries, three direct descriptors per request.
class Rig {
 public:
  Rig(BlockBackend backend, bool overlay = false) {
    mem_ = std::move(GuestMemory::create_anonymous({{GuestAddress(0), 32 << 20}})).value();
    std::unique_ptr<block::DiskImage> img;
    if (overlay) {
      overlay_ = image_path() + ".overlay";
      ::unlink(overlay_.c_str());
      img = std::move(block::open_overlay_image(image_path(), overlay_)).value();
    } else {
      img = std::move(block::open_raw_image(image_path(), false)).value();
    }
    dev_ = std::move(VirtioBlock::create(std::move(img), "bench", {}, backend)).value();
    QueueState s;
    s.size = kQueue;
    s.ready = true;
    s.desc_table = kDesc;
    s.avail_ring = kAvail;
    s.used_ring = kUsed;
    ActivationContext ctx;
    ctx.memory = &mem_;
    ctx.queues.push_back(std::move(Queue::activate(mem_, s, kQueue)).value());
    ctx.acked_features = dev_->device_features() | kFVersion1;
    ctx.signals = &signals_;
    ctx.errors = &errors_;
    if (!dev_->activate(std::move(ctx)).ok()) std::abort();
  }
  ~Rig() {
    dev_->reset();
    dev_.reset();
    if (!overlay_.empty()) ::unlink(overlay_.c_str());
  }
  bool uring() const { return dev_->using_io_uring(); }

  // Request `slot` (0..63): header, `len` data bytes at kData + slot * 256 KiB, status.
  void add(uint16_t slot, uint32_t type, uint64_t sector, uint32_t len) {
    (void)mem_.write_obj(GuestAddress(kHeaders + 16ull * slot), virtio_blk_outhdr{type, 0, sector});
    const uint16_t d = static_cast<uint16_t>(3 * slot);
    const uint16_t data_flags = type == VIRTIO_BLK_T_IN ? kDescFWrite : 0;
    desc(d, kHeaders + 16ull * slot, 16, kDescFNext, d + 1);
    desc(d + 1, kData + (uint64_t{slot} << 18), len, kDescFNext | data_flags, d + 2);
    desc(d + 2, kStatus + slot, 1, kDescFWrite, 0);
    (void)mem_.write_obj(GuestAddress(kAvail + kAvailRing + 2ull * (avail_ % kQueue)), d);
    ++avail_;
  }
  // Publishes what add() queued, notifies, and checks that everything completed.
  void kick(benchmark::State& state) {
    (void)mem_.write_obj(GuestAddress(kAvail + kAvailIdx), avail_);
    dev_->queue_notify(0);
    const uint16_t used = *mem_.read_obj<uint16_t>(GuestAddress(kUsed + kUsedIdx));
    if (used != avail_) state.SkipWithError("requests did not complete");
  }

 private:
  void desc(uint16_t i, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next) {
    (void)mem_.write_obj(GuestAddress(kDesc + 16ull * i), Desc{addr, len, flags, next});
  }

  GuestMemory mem_;
  NullSignals signals_;
  GuestErrorCounters errors_;
  std::shared_ptr<VirtioBlock> dev_;
  std::string overlay_;
  uint16_t avail_ = 0;
};

BlockBackend backend_arg(const benchmark::State& state) {
  return state.range(0) ? BlockBackend::kIoUring : BlockBackend::kSync;
}

// 4 KiB reads at random 4 KiB-aligned offsets, `depth` per notify.
void random_read(benchmark::State& state, bool overlay) {
  Rig rig(backend_arg(state), overlay);
  const auto depth = static_cast<uint16_t>(state.range(1));
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (auto _ : state) {
    for (uint16_t i = 0; i < depth; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      rig.add(i, VIRTIO_BLK_T_IN, (x % (kImageSize / 4096)) * 8, 4096);
    }
    rig.kick(state);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * depth);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * depth * 4096);
  state.counters["IOPS"] = benchmark::Counter(static_cast<double>(state.iterations()) * depth,
                                              benchmark::Counter::kIsRate);
  state.SetLabel(rig.uring() ? "io_uring" : "sync");
}

void BM_BlockRandRead4K(benchmark::State& state) {
  random_read(state, false);
}
BENCHMARK(BM_BlockRandRead4K)
    ->ArgNames({"uring", "qd"})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({0, 32})
    ->Args({1, 32})
    ->UseRealTime();

void BM_BlockOverlayRandRead4K(benchmark::State& state) {
  random_read(state, true);
}
BENCHMARK(BM_BlockOverlayRandRead4K)->ArgNames({"uring", "qd"})->Args({0, 32})->UseRealTime();

// 128 KiB transfers walking the image in order, `depth` per notify.
void sequential(benchmark::State& state, uint32_t type) {
  Rig rig(backend_arg(state));
  const auto depth = static_cast<uint16_t>(state.range(1));
  constexpr uint32_t kLen = 128 * 1024;
  uint64_t sector = 0;
  for (auto _ : state) {
    for (uint16_t i = 0; i < depth; ++i) {
      rig.add(i, type, sector, kLen);
      sector = (sector + kLen / 512) % (kImageSize / 512);
    }
    rig.kick(state);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * depth * kLen);
  state.SetLabel(rig.uring() ? "io_uring" : "sync");
}

void BM_BlockSeqRead128K(benchmark::State& state) {
  sequential(state, VIRTIO_BLK_T_IN);
}
BENCHMARK(BM_BlockSeqRead128K)
    ->ArgNames({"uring", "qd"})
    ->Args({0, 8})
    ->Args({1, 8})
    ->UseRealTime();

void BM_BlockSeqWrite128K(benchmark::State& state) {
  sequential(state, VIRTIO_BLK_T_OUT);
}
BENCHMARK(BM_BlockSeqWrite128K)
    ->ArgNames({"uring", "qd"})
    ->Args({0, 8})
    ->Args({1, 8})
    ->UseRealTime();

}  // namespace
}  // namespace carapace

BENCHMARK_MAIN();
