// Test helpers for virtio-blk: temporary image files, and a fake driver that builds block
// requests in fake guest memory and drives a VirtioBlock through MmioTransport.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/virtio_blk.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/virtio/mmio_access.h"
#include "tests/unit/virtio/test_ring.h"
#include "vmm/devices/block/virtio_block.h"
#include "vmm/virtio/mmio_transport.h"

namespace carapace::blocktest {

using namespace virtio;
using namespace virtio::fake;

// A temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/carapace-blk-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { (void)!std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Byte i of a pattern image: depends on the position, so misplaced reads show.
inline uint8_t pattern_byte(uint64_t i, uint8_t seed = 1) {
  return static_cast<uint8_t>((i * 131 + (i >> 9) * 7 + seed) & 0xff);
}

inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

inline std::vector<uint8_t> pattern(uint64_t size, uint8_t seed = 1) {
  std::vector<uint8_t> v(size);
  for (uint64_t i = 0; i < size; ++i)
    v[i] = pattern_byte(i, seed);
  return v;
}

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::vector<uint8_t> out;
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return out;
  struct stat st;
  ::fstat(fd, &st);
  out.resize(static_cast<size_t>(st.st_size));
  if (::pread(fd, out.data(), out.size(), 0) != static_cast<ssize_t>(out.size())) out.clear();
  ::close(fd);
  return out;
}

inline uint64_t allocated_bytes(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) < 0) return 0;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

// Guest memory layout for block requests (region 0 is [0, 2 MiB), region 1 [4 MiB, 6 MiB)).
inline constexpr uint64_t kIndirectBase = 0x40000;  // 64 bytes per head
inline constexpr uint64_t kHeaderBase = 0x50000;    // 16 bytes per head
inline constexpr uint64_t kStatusBase = 0x60000;    // 1 byte per head (poisoned with 0xee)
inline constexpr uint64_t kDataBase = 0x100000;     // 4 KiB per head by default
inline constexpr uint64_t kBigData = 4 << 20;       // region 1: 2 MiB for large transfers
inline constexpr uint8_t kStatusPoison = 0xee;

// The back ends every parameterised block test runs on, and their names in the test list.
inline const auto kBothBackends = ::testing::Values(BlockBackend::kSync, BlockBackend::kIoUring);
inline std::string backend_name(const ::testing::TestParamInfo<BlockBackend>& info) {
  return info.param == BlockBackend::kSync ? "Sync" : "IoUring";
}

class BlockTest : public ::testing::Test {
 protected:
  ~BlockTest() override { stop(); }

  // Creates the device over `image` and brings it to DRIVER_OK with a `queue_size` ring.
  void start(std::unique_ptr<block::DiskImage> image, BlockBackend backend,
             const RateLimiter::Config& limit = {}, uint16_t queue_size = 64,
             EventLoop* loop = nullptr, const std::string& serial = "test-serial") {
    auto dev = VirtioBlock::create(std::move(image), serial, limit, backend);
    ASSERT_TRUE(dev.ok()) << dev.error().describe();
    dev_ = *dev;
    t_ = std::move(MmioTransport::create(dev_, mem_, &irq_, loop, 0xd0000000)).value();
    ring_ = std::make_unique<TestRing>(mem_, queue_size);
    driver_ok();
  }
  void driver_ok() {
    wr(MmioReg::kStatus, 0);  // reset first: the device may still be serving the old rings
    ring_->clear();
    wr(MmioReg::kStatus, 1);
    wr(MmioReg::kStatus, 3);
    wr(MmioReg::kDeviceFeaturesSel, 0);
    features_ = rd(MmioReg::kDeviceFeatures);  // block bits, INDIRECT_DESC and EVENT_IDX
    wr(MmioReg::kDriverFeaturesSel, 1);
    wr(MmioReg::kDriverFeatures, 1);  // VIRTIO_F_VERSION_1 (bit 32)
    wr(MmioReg::kDriverFeaturesSel, 0);
    wr(MmioReg::kDriverFeatures, features_);
    wr(MmioReg::kStatus, 11);
    mmio_set_queue(*t_, 0, *ring_);
    wr(MmioReg::kStatus, 15);
    ASSERT_EQ(rd(MmioReg::kStatus), 15u);
    used_seen_ = 0;
  }
  void stop() {
    t_.reset();
    dev_.reset();
    if (loop_) loop_->stop();
  }
  EventLoop* start_loop() {
    loop_ = std::move(EventLoop::create()).value();
    loop_->start_thread();
    return loop_.get();
  }

  uint32_t rd(MmioReg r) { return mmio_read32(*t_, r); }
  void wr(MmioReg r, uint32_t v) { mmio_write32(*t_, r, v); }
  template <typename T>
  T config(uint64_t offset) {
    T v{};
    t_->read(offset_of(MmioReg::kConfig) + offset, {reinterpret_cast<uint8_t*>(&v), sizeof v});
    return v;
  }
  void notify() { wr(MmioReg::kQueueNotify, 0); }

  static uint64_t data_addr(uint16_t head) { return kDataBase + uint64_t{head} * 4096; }

  // Builds request `head` as an indirect table: header (readable) -> data (readable for
  // writes, writable otherwise; omitted when data_len == 0) -> status (writable). Publishes it.
  void submit(uint16_t head, uint32_t type, uint64_t sector, uint32_t data_len, uint64_t data = 0,
              bool publish = true) {
    if (data == 0) data = data_addr(head);
    virtio_blk_outhdr hdr{type, 0, sector};
    (void)mem_.write_obj(GuestAddress(kHeaderBase + 16ull * head), hdr);
    (void)mem_.write_obj(GuestAddress(kStatusBase + head), kStatusPoison);
    const uint64_t table = kIndirectBase + 64ull * head;
    const bool data_in = type == VIRTIO_BLK_T_IN || type == VIRTIO_BLK_T_GET_ID;
    uint16_t n = 0;
    ring_->set_desc_at(table, n, kHeaderBase + 16ull * head, 16, kDescFNext, n + 1);
    ++n;
    if (data_len > 0) {
      ring_->set_desc_at(table, n, data, data_len,
                         kDescFNext | (data_in ? kDescFWrite : uint16_t{0}), n + 1);
      ++n;
    }
    ring_->set_desc_at(table, n, kStatusBase + head, 1, kDescFWrite);
    ++n;
    ring_->set_desc(head, table, 16u * n, kDescFIndirect);
    if (publish) ring_->publish(head);
  }
  // Discard / write zeroes: header, one 16-byte range (readable), status.
  void submit_range(uint16_t head, uint32_t type, uint64_t sector, uint32_t sectors,
                    uint32_t flags = 0) {
    virtio_blk_discard_write_zeroes range{sector, sectors, flags};
    (void)mem_.write_obj(GuestAddress(data_addr(head)), range);
    submit(head, type, 0, sizeof range);
  }
  uint8_t status(uint16_t head) {
    return *mem_.read_obj<uint8_t>(GuestAddress(kStatusBase + head));
  }
  // The status bytes of heads 0, 1, 2, ... are `want`, in that order.
  void expect_statuses(std::initializer_list<uint8_t> want) {
    uint16_t head = 0;
    for (uint8_t w : want) {
      EXPECT_EQ(status(head), w) << "head " << head;
      ++head;
    }
  }
  std::vector<uint8_t> guest_bytes(uint64_t addr, size_t len) { return ring_->bytes(addr, len); }
  void put_guest_bytes(uint64_t addr, const std::vector<uint8_t>& b) {
    (void)mem_.write(GuestAddress(addr), b);
  }
  // Polls until the used index reaches `n` (for event-loop tests).
  bool wait_used(uint16_t n, int ms = 5000) {
    for (int i = 0; i < ms; ++i) {
      if (ring_->used_idx() == n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return ring_->used_idx() == n;
  }
  // The used element for `head` among everything used so far (completion order may differ).
  std::optional<UsedElem> used_for(uint16_t head) {
    for (uint16_t i = 0; i < ring_->used_idx(); ++i)
      if (ring_->used(i).id == head) return ring_->used(i);
    return std::nullopt;
  }

  GuestMemory mem_ = make_memory();
  CountingIrq irq_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<TestRing> ring_;
  std::shared_ptr<VirtioBlock> dev_;
  std::shared_ptr<MmioTransport> t_;
  uint32_t features_ = 0;
  uint16_t used_seen_ = 0;
  TempDir dir_;
};

}  // namespace carapace::blocktest
