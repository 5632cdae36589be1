// Copy-on-write overlays: the base is never written, the overlay stays sparse, partial-block
// writes copy the rest of the block up first, and reopening the overlay shows the same disk.
#include "vmm/devices/block/overlay_image.h"

#include <gtest/gtest.h>

#include "tests/unit/devices/block/block_fixture.h"
#include "vmm/devices/block/block_bitmap.h"

namespace carapace::blocktest {
namespace {

using block::OverlayImage;

constexpr uint64_t kBaseSize = 1 << 20;

class OverlayTest : public BlockTest {
 protected:
  void SetUp() override {
    base_ = dir_.file("base.img");
    overlay_ = dir_.file("vm1.overlay");
    write_file(base_, pattern(kBaseSize));
  }
  std::unique_ptr<OverlayImage> open_image() {
    auto img = OverlayImage::open(base_, overlay_);
    EXPECT_TRUE(img.ok()) << img.error().describe();
    return img.ok() ? std::move(img).value() : nullptr;
  }
  // Image-level I/O, bypassing the device.
  std::vector<uint8_t> read(OverlayImage& img, uint64_t offset, size_t len) {
    std::vector<uint8_t> out(len, 0xcc);
    iovec v{out.data(), len};
    EXPECT_TRUE(img.read(offset, {&v, 1}).ok());
    return out;
  }
  void write(OverlayImage& img, uint64_t offset, std::vector<uint8_t> data) {
    iovec v{data.data(), data.size()};
    EXPECT_TRUE(img.write(offset, {&v, 1}).ok());
  }
  std::vector<uint8_t> base_bytes(uint64_t offset, size_t len) {
    auto p = pattern(kBaseSize);
    return {p.begin() + static_cast<long>(offset), p.begin() + static_cast<long>(offset + len)};
  }

  std::string base_, overlay_;
};

TEST_F(OverlayTest, FreshOverlayIsSparseAndReadsTheBase) {
  auto img = open_image();
  ASSERT_TRUE(img);
  EXPECT_EQ(img->capacity_sectors(), kBaseSize / 512);
  EXPECT_FALSE(img->read_only());
  EXPECT_FALSE(img->supports_discard());
  EXPECT_EQ(img->present_blocks(), 0u);
  EXPECT_EQ(read(*img, 0, kBaseSize), pattern(kBaseSize));
  EXPECT_EQ(read_file(overlay_).size(), kBaseSize);
  EXPECT_EQ(allocated_bytes(overlay_), 0u);
}

TEST_F(OverlayTest, WritesLandInTheOverlayAndNeverInTheBase) {
  auto img = open_image();
  ASSERT_TRUE(img);
  const uint64_t bs = img->block_size();
  write(*img, 2 * bs, std::vector<uint8_t>(bs, 0x11));  // one whole block
  EXPECT_EQ(read(*img, 2 * bs, bs), std::vector<uint8_t>(bs, 0x11));
  EXPECT_EQ(read(*img, bs, bs), base_bytes(bs, bs));
  EXPECT_EQ(read_file(base_), pattern(kBaseSize));
  EXPECT_TRUE(img->block_present(2));
  EXPECT_EQ(img->present_blocks(), 1u);
  EXPECT_LE(allocated_bytes(overlay_), 2 * bs);  // sparse: about one block
  EXPECT_GE(allocated_bytes(overlay_), bs);
}

TEST_F(OverlayTest, PartialBlockWriteCopiesTheRestOfTheBlockUp) {
  auto img = open_image();
  ASSERT_TRUE(img);
  const uint64_t bs = img->block_size();
  write(*img, bs + 512, std::vector<uint8_t>(1024, 0x22));  // sectors 1-2 of block 1
  auto got = read(*img, bs, bs);
  auto want = base_bytes(bs, bs);
  std::fill(want.begin() + 512, want.begin() + 1536, 0x22);
  EXPECT_EQ(got, want);
  // The overlay holds the whole block, base bytes included (what a reopen will read).
  auto ov = read_file(overlay_);
  EXPECT_EQ(std::vector<uint8_t>(ov.begin() + static_cast<long>(bs),
                                 ov.begin() + static_cast<long>(2 * bs)),
            want);
  // A second partial write to the now-present block is written in place.
  write(*img, bs, std::vector<uint8_t>(512, 0x33));
  std::fill(want.begin(), want.begin() + 512, 0x33);
  EXPECT_EQ(read(*img, bs, bs), want);
  EXPECT_EQ(read_file(base_), pattern(kBaseSize));
}

TEST_F(OverlayTest, WriteSpanningPartialAndWholeBlocks) {
  auto img = open_image();
  ASSERT_TRUE(img);
  const uint64_t bs = img->block_size();
  // From the middle of block 3 to the middle of block 6: two copy-ups and two whole blocks.
  const uint64_t from = 3 * bs + bs / 2, len = 3 * bs;
  write(*img, from, std::vector<uint8_t>(len, 0x44));
  for (uint64_t b = 3; b <= 6; ++b)
    EXPECT_TRUE(img->block_present(b)) << b;
  EXPECT_FALSE(img->block_present(2));
  EXPECT_FALSE(img->block_present(7));
  auto got = read(*img, 2 * bs, 6 * bs);  // a read across absent, present, absent blocks
  auto want = base_bytes(2 * bs, 6 * bs);
  std::fill(want.begin() + static_cast<long>(from - 2 * bs),
            want.begin() + static_cast<long>(from - 2 * bs + len), 0x44);
  EXPECT_EQ(got, want);
}

TEST_F(OverlayTest, ReopeningTheOverlayShowsTheSameDisk) {
  std::vector<uint8_t> before;
  uint64_t bs;
  {
    auto img = open_image();
    ASSERT_TRUE(img);
    bs = img->block_size();
    write(*img, 0, std::vector<uint8_t>(512, 0x55));                // partial, block 0
    write(*img, 10 * bs, std::vector<uint8_t>(3 * bs, 0x66));       // whole blocks 10-12
    write(*img, kBaseSize - 512, std::vector<uint8_t>(512, 0x77));  // the last sector
    ASSERT_TRUE(img->flush().ok());
    before = read(*img, 0, kBaseSize);
  }
  auto img = open_image();
  ASSERT_TRUE(img);
  EXPECT_EQ(img->present_blocks(), 5u);  // 0, 10, 11, 12, last
  EXPECT_TRUE(img->block_present(0));
  EXPECT_FALSE(img->block_present(1));
  EXPECT_TRUE(img->block_present(11));
  EXPECT_EQ(read(*img, 0, kBaseSize), before);
  EXPECT_EQ(read_file(base_), pattern(kBaseSize));
}

TEST_F(OverlayTest, BaseWhoseSizeIsNotAMultipleOfTheBlock) {
  write_file(base_, pattern(kBaseSize + 1536 + 100));  // 3 extra sectors and a partial one
  auto img = open_image();
  ASSERT_TRUE(img);
  EXPECT_EQ(img->capacity_sectors(), kBaseSize / 512 + 3);
  write(*img, kBaseSize + 512, std::vector<uint8_t>(512, 0x88));  // copy-up of the short block
  auto p = pattern(kBaseSize + 1536 + 100);
  std::vector<uint8_t> want(p.begin() + kBaseSize, p.begin() + kBaseSize + 1536);
  std::fill(want.begin() + 512, want.begin() + 1024, 0x88);
  EXPECT_EQ(read(*img, kBaseSize, 1536), want);
  iovec v{want.data(), 1024};
  EXPECT_FALSE(img->read(kBaseSize + 1024, {&v, 1}).ok());  // past the capacity
  EXPECT_EQ(read_file(overlay_).size(), kBaseSize + 1536 + 100);
}

TEST_F(OverlayTest, RefusesAMismatchedOrSharedOverlay) {
  write_file(overlay_, std::vector<uint8_t>(4096, 0));
  auto wrong_size = OverlayImage::open(base_, overlay_);
  ASSERT_FALSE(wrong_size.ok());
  EXPECT_EQ(wrong_size.error().kind, ErrorKind::kInvalidInput);
  auto itself = OverlayImage::open(base_, base_);
  ASSERT_FALSE(itself.ok());
  EXPECT_EQ(itself.error().kind, ErrorKind::kInvalidInput);
  ::unlink(overlay_.c_str());
  auto first = open_image();
  ASSERT_TRUE(first);
  auto second = OverlayImage::open(base_, overlay_);  // another VM on the same overlay
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("in use"), std::string::npos);
  auto missing = OverlayImage::open(dir_.file("nope.img"), dir_.file("x.overlay"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::kInvalidInput);
}

TEST_F(OverlayTest, ManyOverlaysShareOneBase) {
  auto a = OverlayImage::open(base_, dir_.file("a.overlay"));
  auto b = OverlayImage::open(base_, dir_.file("b.overlay"));
  ASSERT_TRUE(a.ok() && b.ok());
  write(**a, 0, std::vector<uint8_t>(4096, 0xaa));
  write(**b, 0, std::vector<uint8_t>(4096, 0xbb));
  EXPECT_EQ(read(**a, 0, 4096), std::vector<uint8_t>(4096, 0xaa));
  EXPECT_EQ(read(**b, 0, 4096), std::vector<uint8_t>(4096, 0xbb));
  EXPECT_EQ(read_file(base_), pattern(kBaseSize));
}

TEST_F(OverlayTest, ThroughTheDeviceWithoutDiscard) {
  auto img = open_image();
  ASSERT_TRUE(img);
  start(std::move(img), BlockBackend::kAuto);
  EXPECT_FALSE(dev_->using_io_uring());  // overlays run synchronously
  EXPECT_FALSE(features_ & (1u << VIRTIO_BLK_F_DISCARD));
  EXPECT_FALSE(features_ & (1u << VIRTIO_BLK_F_WRITE_ZEROES));
  EXPECT_FALSE(features_ & (1u << VIRTIO_BLK_F_RO));
  (void)mem_.write(GuestAddress(data_addr(0)), std::vector<uint8_t>(1024, 0x99));
  submit(0, VIRTIO_BLK_T_OUT, 3, 1024);
  submit(1, VIRTIO_BLK_T_IN, 0, 4096);
  submit(2, VIRTIO_BLK_T_FLUSH, 0, 0);
  submit_range(3, VIRTIO_BLK_T_DISCARD, 0, 8);
  notify();
  ASSERT_EQ(ring_->used_idx(), 4);
  EXPECT_EQ(status(0), VIRTIO_BLK_S_OK);
  EXPECT_EQ(status(1), VIRTIO_BLK_S_OK);
  EXPECT_EQ(status(2), VIRTIO_BLK_S_OK);
  EXPECT_EQ(status(3), VIRTIO_BLK_S_UNSUPP);
  auto want = base_bytes(0, 4096);
  std::fill(want.begin() + 1536, want.begin() + 2560, 0x99);
  EXPECT_EQ(guest_bytes(data_addr(1), 4096), want);
  EXPECT_EQ(read_file(base_), pattern(kBaseSize));
}

TEST(BlockBitmapTest, SetTestCountAndBounds) {
  block::BlockBitmap bm(130);
  EXPECT_FALSE(bm.test(0));
  bm.set_range(63, 65);
  bm.set_range(129, 500);  // clamped
  bm.set_range(200, 300);  // outside: ignored
  EXPECT_TRUE(bm.test(63) && bm.test(64) && bm.test(65) && bm.test(129));
  EXPECT_FALSE(bm.test(62) || bm.test(66) || bm.test(130) || bm.test(UINT64_MAX));
  EXPECT_EQ(bm.count(), 4u);
}

}  // namespace
}  // namespace carapace::blocktest
