// ChainReader / ChainWriter: byte streams across segment boundaries, all-or-nothing reads and
// writes, and splitting (the status byte at the end of a block request).
#include "vmm/virtio/chain_io.h"

#include <gtest/gtest.h>

#include <array>
#include <numeric>

#include "tests/unit/virtio/test_ring.h"
#include "vmm/virtio/descriptor_chain.h"

namespace carapace::virtio {
namespace {

using namespace fake;

class ChainIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Readable: 5 bytes + 7 bytes; writable: 3 bytes + 6 bytes + 1 byte (the "status").
    ring_.set_desc(0, kBufferBase, 5, kDescFNext, 1);
    ring_.set_desc(1, kBufferBase + 0x100, 7, kDescFNext, 2);
    ring_.set_desc(2, kBufferBase + 0x200, 3, kDescFNext | kDescFWrite, 3);
    ring_.set_desc(3, kBufferBase + 0x300, 6, kDescFNext | kDescFWrite, 4);
    ring_.set_desc(4, kBufferBase + 0x400, 1, kDescFWrite);
    for (int i = 0; i < 5; ++i)
      ring_.fill(kBufferBase + i, static_cast<uint8_t>(i), 1);
    for (int i = 0; i < 7; ++i)
      ring_.fill(kBufferBase + 0x100 + i, static_cast<uint8_t>(5 + i), 1);
    auto table = mem_.slice(GuestAddress(kDescAddr), desc_table_bytes(16));
    chain_.emplace(std::move(DescriptorChain::parse(mem_, *table, 16, 0, true)).value());
  }

  GuestMemory mem_ = make_memory();
  TestRing ring_{mem_, 16};
  std::optional<DescriptorChain> chain_;
};

TEST_F(ChainIoTest, ReaderStreamsAcrossSegments) {
  auto r = chain_->reader();
  EXPECT_EQ(r.available(), 12u);
  auto first = r.read_obj<uint32_t>();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 0x03020100u);
  // Spans the boundary between the two readable buffers.
  auto second = r.read_obj<uint32_t>();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, 0x07060504u);
  EXPECT_EQ(r.bytes_read(), 8u);
  std::array<uint8_t, 4> rest{};
  ASSERT_TRUE(r.read(rest).ok());
  EXPECT_EQ(rest, (std::array<uint8_t, 4>{8, 9, 10, 11}));
  EXPECT_EQ(r.available(), 0u);
}

TEST_F(ChainIoTest, ShortReadIsAGuestErrorAndConsumesNothing) {
  auto r = chain_->reader();
  ASSERT_TRUE(r.skip(10).ok());
  auto v = r.read_obj<uint32_t>();
  ASSERT_FALSE(v.ok());
  EXPECT_TRUE(is_guest_error(v.error()));
  EXPECT_EQ(r.available(), 2u);
  EXPECT_FALSE(r.skip(3).ok());
  EXPECT_EQ(r.available(), 2u);
}

TEST_F(ChainIoTest, WriterSplitsOffStatusByte) {
  auto w = chain_->writer();
  EXPECT_EQ(w.available(), 10u);
  auto status = w.split_end(1);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(w.available(), 9u);
  EXPECT_EQ(status->available(), 1u);
  std::array<uint8_t, 9> data;
  std::iota(data.begin(), data.end(), 0x40);
  ASSERT_TRUE(w.write(data).ok());
  EXPECT_FALSE(w.write_obj(uint8_t{0}).ok());  // the status byte is not reachable from here
  ASSERT_TRUE(status->write_obj(uint8_t{0xee}).ok());
  EXPECT_EQ(w.bytes_written() + status->bytes_written(), 10u);
  EXPECT_EQ(ring_.bytes(kBufferBase + 0x200, 3), (std::vector<uint8_t>{0x40, 0x41, 0x42}));
  EXPECT_EQ(ring_.bytes(kBufferBase + 0x300, 6),
            (std::vector<uint8_t>{0x43, 0x44, 0x45, 0x46, 0x47, 0x48}));
  EXPECT_EQ(ring_.bytes(kBufferBase + 0x400, 1), std::vector<uint8_t>{0xee});
}

TEST_F(ChainIoTest, SplitAtKeepsPrefix) {
  auto r = chain_->reader();
  ASSERT_TRUE(r.skip(1).ok());
  auto tail = r.split_at(6);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(r.available(), 6u);
  EXPECT_EQ(tail->available(), 5u);
  auto b = tail->read_obj<uint8_t>();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, 7);
  EXPECT_FALSE(r.split_at(7).ok());
  EXPECT_FALSE(chain_->writer().split_end(11).ok());
}

TEST_F(ChainIoTest, NextSliceYieldsBoundedHostSpans) {
  auto w = chain_->writer();
  std::vector<size_t> sizes;
  for (;;) {
    auto s = w.next_slice(4);
    ASSERT_TRUE(s.ok());
    if (s->empty()) break;
    sizes.push_back(s->size());
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{3, 4, 2, 1}));
  EXPECT_EQ(w.bytes_written(), 10u);
}

}  // namespace
}  // namespace carapace::virtio
