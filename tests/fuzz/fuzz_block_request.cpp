// Fuzzes virtio-blk request handling end to end: the input is a queue configuration and the
// guest memory holding the rings, descriptor tables, request headers and data buffers. One of
// five devices serves it through queue_notify(): a small writable image (synchronous or
// io_uring), the same read-only (synchronous or io_uring), or a copy-on-write overlay. After
// each input the device is reset and the files are checked: the read-only image and the
// overlay's base are unchanged, and no image grew or changed past its capacity (no host I/O out
// of bounds; docs/security.md #14). ASan/UBSan catch any access outside guest RAM.
//
// Input: [device:1][size_log2:1][rounds:1][bump:1] then memory bytes (region 0, then region 1).
//   device % 5: 0 rw sync, 1 rw io_uring, 2 ro sync, 3 ro io_uring, 4 overlay; bit 7: EVENT_IDX.
//   The queue has 1 << (size_log2 % 9) entries: descriptors at 0x0, avail ring at 0x1000, used
//   ring at 0x2000, indirect descriptors allowed. queue_notify() runs (rounds % 4) + 1 times;
//   between rounds avail.idx moves on by `bump` (the guest publishing more, or garbage).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_memory.h"
#include "vmm/devices/block/disk_image.h"
#include "vmm/devices/block/virtio_block.h"
#include "vmm/virtio/ring_layout.h"

using namespace carapace;
using namespace carapace::virtio;

namespace {

constexpr uint64_t kCapacity = 64 * 1024;        // 128 sectors
constexpr uint64_t kFileSize = kCapacity + 300;  // a partial sector past the capacity

class NullSignals : public DeviceSignals {
 public:
  void signal_used(uint16_t) override {}
  void signal_config_change() override {}
  void report_needs_reset(const Error&) override {}
};

std::vector<uint8_t> image_bytes(uint8_t seed) {
  std::vector<uint8_t> v(kFileSize);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<uint8_t>(i * 31 + seed);
  return v;
}

void write_whole(const std::string& path, const std::vector<uint8_t>& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0600);
  if (fd < 0 || ::pwrite(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size()))
    __builtin_trap();
  ::close(fd);
}

std::vector<uint8_t> read_whole(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) __builtin_trap();
  struct stat st;
  ::fstat(fd, &st);
  std::vector<uint8_t> v(static_cast<size_t>(st.st_size));
  if (::pread(fd, v.data(), v.size(), 0) != static_cast<ssize_t>(v.size())) __builtin_trap();
  ::close(fd);
  return v;
}

struct Fixture {
  std::string dir, rw, ro, base, overlay;
  std::vector<uint8_t> rw_bytes = image_bytes(1), ro_bytes = image_bytes(2);
  std::shared_ptr<VirtioBlock> devices[5];

  Fixture() {
    char tmpl[] = "/tmp/fuzz-blk-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) __builtin_trap();
    dir = tmpl;
    rw = dir + "/rw.img";
    ro = dir + "/ro.img";
    base = dir + "/base.img";
    overlay = dir + "/vm.overlay";
    write_whole(rw, rw_bytes);
    write_whole(ro, ro_bytes);
    write_whole(base, ro_bytes);
    // The writable image is opened by two devices; each takes the lock in turn (see below).
    auto make = [&](std::unique_ptr<block::DiskImage> img, BlockBackend b) {
      auto d = VirtioBlock::create(std::move(img), "fuzz", {}, b);
      if (!d.ok()) __builtin_trap();
      return *d;
    };
    devices[2] = make(std::move(block::open_raw_image(ro, true)).value(), BlockBackend::kSync);
    devices[3] = make(std::move(block::open_raw_image(ro, true)).value(), BlockBackend::kAuto);
    devices[4] =
        make(std::move(block::open_overlay_image(base, overlay)).value(), BlockBackend::kSync);
  }
  ~Fixture() { (void)!std::system(("rm -rf '" + dir + "'").c_str()); }

  // The writable image takes an exclusive lock, so its device is built per input.
  std::shared_ptr<VirtioBlock> rw_device(bool uring) {
    write_whole(rw, rw_bytes);
    auto img = block::open_raw_image(rw, false);
    if (!img.ok()) __builtin_trap();
    auto d = VirtioBlock::create(std::move(img).value(), "fuzz", {},
                                 uring ? BlockBackend::kAuto : BlockBackend::kSync);
    if (!d.ok()) __builtin_trap();
    return *d;
  }

  void check_files(int which) {
    if (which <= 1) {  // nothing past the capacity changed, and the size is the same
      auto now = read_whole(rw);
      if (now.size() != kFileSize ||
          std::memcmp(now.data() + kCapacity, rw_bytes.data() + kCapacity, kFileSize - kCapacity))
        __builtin_trap();
    } else if (which <= 3) {
      if (read_whole(ro) != ro_bytes) __builtin_trap();
    } else {
      if (read_whole(base) != ro_bytes) __builtin_trap();
      struct stat st;
      if (::stat(overlay.c_str(), &st) < 0 || static_cast<uint64_t>(st.st_size) != kFileSize)
        __builtin_trap();
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* fx = new Fixture();
  const GuestMemory& mem = fuzz::fuzz_memory();
  fuzz::Input in(data, size);
  const uint8_t device = in.take<uint8_t>();
  const uint8_t size_log2 = in.take<uint8_t>();
  const uint8_t rounds = in.take<uint8_t>();
  const uint8_t bump = in.take<uint8_t>();
  fuzz::load_memory(mem, in.data(), in.size());

  QueueState s;
  s.ready = true;
  s.size = static_cast<uint16_t>(1u << (size_log2 % 9));
  s.desc_table = 0x0;
  s.avail_ring = 0x1000;
  s.used_ring = 0x2000;
  s.event_idx = device & 0x80;
  s.indirect = true;
  auto q = Queue::activate(mem, s, VirtioBlock::kQueueSize);
  if (!q.ok()) return 0;

  const int which = (device & 0x7f) % 5;
  std::shared_ptr<VirtioBlock> dev = which <= 1 ? fx->rw_device(which == 1) : fx->devices[which];
  NullSignals signals;
  GuestErrorCounters errors;
  ActivationContext ctx;
  ctx.memory = &mem;
  ctx.queues.push_back(std::move(q).value());
  ctx.acked_features =
      dev->device_features() | kFVersion1 | kFIndirectDesc | (s.event_idx ? kFEventIdx : 0);
  ctx.signals = &signals;
  ctx.errors = &errors;
  if (!dev->activate(std::move(ctx)).ok()) __builtin_trap();
  for (int r = 0; r <= rounds % 4; ++r) {
    dev->queue_notify(0);
    const auto idx = mem.read_obj<uint16_t>(GuestAddress(s.avail_ring + kAvailIdx));
    (void)mem.write_obj(GuestAddress(s.avail_ring + kAvailIdx), static_cast<uint16_t>(*idx + bump));
  }
  dev->queue_notify(1);                     // not a queue of ours: ignored
  if (std::getenv("FUZZ_BLOCK_VERBOSE")) {  // to check what a seed exercises
    const BlockCounters c = dev->counters();
    std::fprintf(stderr, "device %d: requests %llu errors %llu read %llu written %llu\n", which,
                 static_cast<unsigned long long>(c.requests),
                 static_cast<unsigned long long>(c.errors),
                 static_cast<unsigned long long>(c.read_bytes),
                 static_cast<unsigned long long>(c.write_bytes));
  }
  dev->reset();
  if (dev->in_flight() != 0) __builtin_trap();
  dev.reset();  // the writable device lets go of its lock here
  fx->check_files(which);
  return 0;
}
