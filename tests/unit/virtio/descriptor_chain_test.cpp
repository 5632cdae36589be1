// DescriptorChain::parse: happy paths (direct and indirect chains) and every refusal of
// docs/security.md #1, #2, #3 and #5, on hand-built descriptor tables in fake guest memory.
#include "vmm/virtio/descriptor_chain.h"

#include <gtest/gtest.h>

#include "tests/unit/virtio/test_ring.h"

namespace carapace::virtio {
namespace {

using namespace fake;

class DescriptorChainTest : public ::testing::Test {
 protected:
  Result<DescriptorChain> parse(uint16_t head, bool indirect = true) {
    auto table = mem_.slice(GuestAddress(kDescAddr), desc_table_bytes(ring_.state.size));
    return DescriptorChain::parse(mem_, *table, ring_.state.size, head, indirect);
  }
  void expect_refused(uint16_t head, const char* what, bool indirect = true) {
    auto c = parse(head, indirect);
    ASSERT_FALSE(c.ok()) << "expected refusal: " << what;
    EXPECT_TRUE(is_guest_error(c.error()));
    EXPECT_NE(c.error().message.find(what), std::string::npos) << c.error().message;
  }

  GuestMemory mem_ = make_memory();
  TestRing ring_{mem_, 16};
};

TEST_F(DescriptorChainTest, ChainOfThreeDescriptors) {
  ring_.set_desc(0, kBufferBase, 16, kDescFNext, 5);
  ring_.set_desc(5, kBufferBase + 0x100, 8, kDescFNext, 2);
  ring_.set_desc(2, kBufferBase + 0x200, 32, kDescFWrite);
  auto c = parse(0);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->head(), 0);
  ASSERT_EQ(c->readable().size(), 2u);
  ASSERT_EQ(c->writable().size(), 1u);
  EXPECT_EQ(c->readable()[1].addr.value, kBufferBase + 0x100);
  EXPECT_EQ(c->readable_bytes(), 24u);
  EXPECT_EQ(c->writable_bytes(), 32u);
}

TEST_F(DescriptorChainTest, IndirectTable) {
  constexpr uint64_t kTable = 0x40000;
  ring_.set_desc_at(kTable, 0, kBufferBase, 16, kDescFNext, 1);
  ring_.set_desc_at(kTable, 1, kBufferBase + 0x100, 100, kDescFNext | kDescFWrite, 2);
  ring_.set_desc_at(kTable, 2, kBufferBase + 0x200, 1, kDescFWrite);
  // The WRITE flag on the indirect descriptor itself is ignored (virtio 1.2 §2.7.5.3.2).
  ring_.set_desc(3, kTable, 3 * 16, kDescFIndirect | kDescFWrite);
  auto c = parse(3);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->head(), 3);
  EXPECT_EQ(c->readable_bytes(), 16u);
  EXPECT_EQ(c->writable_bytes(), 101u);
  EXPECT_EQ(c->writable().size(), 2u);
}

TEST_F(DescriptorChainTest, DirectDescriptorsThenIndirectTable) {
  constexpr uint64_t kTable = 0x40000;
  ring_.set_desc_at(kTable, 0, kBufferBase + 0x100, 4, kDescFWrite);
  ring_.set_desc(0, kBufferBase, 16, kDescFNext, 1);
  ring_.set_desc(1, kTable, 16, kDescFIndirect);
  auto c = parse(0);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->readable_bytes(), 16u);
  EXPECT_EQ(c->writable_bytes(), 4u);
}

TEST_F(DescriptorChainTest, ZeroLengthDescriptorsAreSkipped) {
  ring_.set_desc(0, kBufferBase, 0, kDescFNext, 1);
  ring_.set_desc(1, kBufferBase, 4, kDescFWrite);
  auto c = parse(0);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->readable().empty());
  EXPECT_EQ(c->writable().size(), 1u);
}

TEST_F(DescriptorChainTest, RefusesReadableAfterWritable) {
  ring_.set_desc(0, kBufferBase, 4, kDescFWrite | kDescFNext, 1);
  ring_.set_desc(1, kBufferBase, 4, 0);
  expect_refused(0, "readable descriptor after a writable one");
}

TEST_F(DescriptorChainTest, SecurityCheck1_RefusesBufferPastEndOfRam) {
  ring_.set_desc(0, kRegion1 + kRegion1Size - 8, 16, 0);
  expect_refused(0, "outside guest RAM");
  ring_.set_desc(1, kRegion1 + kRegion1Size, 1, 0);
  expect_refused(1, "outside guest RAM");
}

TEST_F(DescriptorChainTest, SecurityCheck1_RefusesBufferStraddlingGap) {
  ring_.set_desc(0, kRegion0Size - 16, 32, kDescFWrite);
  expect_refused(0, "outside guest RAM");
  ring_.set_desc(1, kRegion0Size + 0x1000, 1, 0);  // inside the gap
  expect_refused(1, "outside guest RAM");
}

TEST_F(DescriptorChainTest, SecurityCheck1_RefusesAddressPlusLengthOverflow) {
  ring_.set_desc(0, UINT64_MAX - 7, 16, 0);
  expect_refused(0, "outside guest RAM");
  ring_.set_desc(1, kBufferBase, 8, kDescFNext, 2);  // bad one later in the chain
  ring_.set_desc(2, UINT64_MAX, 0xffffffff, kDescFWrite);
  expect_refused(1, "outside guest RAM");
}

TEST_F(DescriptorChainTest, SecurityCheck2_CycleEndsAfterQueueSizeHops) {
  ring_.set_desc(0, kBufferBase, 1, kDescFNext, 1);
  ring_.set_desc(1, kBufferBase, 1, kDescFNext, 0);
  expect_refused(0, "longer than its table");
  ring_.set_desc(7, kBufferBase, 1, kDescFNext, 7);  // self-loop
  expect_refused(7, "longer than its table");
}

TEST_F(DescriptorChainTest, SecurityCheck2_LongestLegalChainIsAccepted) {
  for (uint16_t i = 0; i < 16; ++i)
    ring_.set_desc(i, kBufferBase + i, 1, i == 15 ? 0 : kDescFNext, i + 1);
  auto c = parse(0);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->readable_bytes(), 16u);
}

TEST_F(DescriptorChainTest, SecurityCheck2_RefusesNextOutOfRange) {
  ring_.set_desc(0, kBufferBase, 1, kDescFNext, 16);
  expect_refused(0, "next index 16 out of range");
  ring_.set_desc(1, kBufferBase, 1, kDescFNext, 0xffff);
  expect_refused(1, "out of range");
  expect_refused(16, "head index out of range");
}

TEST_F(DescriptorChainTest, SecurityCheck2_CycleInsideIndirectTableEnds) {
  constexpr uint64_t kTable = 0x40000;
  ring_.set_desc_at(kTable, 0, kBufferBase, 1, kDescFNext, 1);
  ring_.set_desc_at(kTable, 1, kBufferBase, 1, kDescFNext, 0);
  ring_.set_desc(0, kTable, 32, kDescFIndirect);
  expect_refused(0, "longer than its table");
  ring_.set_desc_at(kTable, 1, kBufferBase, 1, kDescFNext, 2);  // next past the table's 2 entries
  expect_refused(0, "out of range");
}

TEST(DescriptorChainBigTest, SecurityCheck3_RefusesTotalLengthPast4GiB) {
  // 2 GiB of untouched RAM (MAP_NORESERVE): three 1.5 GiB buffers sum past 2^32.
  auto mem = GuestMemory::create_anonymous({{GuestAddress(0), 2ull << 30}});
  ASSERT_TRUE(mem.ok());
  TestRing ring(*mem, 4);
  const uint32_t kLen = 0x60000000;
  ring.set_desc(0, 0x100000, kLen, kDescFNext, 1);
  ring.set_desc(1, 0x100000, kLen, kDescFNext | kDescFWrite, 2);
  ring.set_desc(2, 0x100000, kLen, kDescFWrite);
  auto table = mem->slice(GuestAddress(kDescAddr), 64);
  auto c = DescriptorChain::parse(*mem, *table, 4, 0, true);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("past 4 GiB"), std::string::npos);
  // Two of them (3 GiB) are fine.
  ring.set_desc(1, 0x100000, kLen, kDescFWrite);
  auto ok = DescriptorChain::parse(*mem, *table, 4, 0, true);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(uint64_t{ok->readable_bytes()} + ok->writable_bytes(), 2ull * kLen);
}

TEST_F(DescriptorChainTest, SecurityCheck5_RefusesIndirectLengthNotMultipleOf16) {
  ring_.set_desc(0, 0x40000, 24, kDescFIndirect);
  expect_refused(0, "indirect table length 24");
  ring_.set_desc(1, 0x40000, 0, kDescFIndirect);
  expect_refused(1, "indirect table length 0");
}

TEST_F(DescriptorChainTest, SecurityCheck5_RefusesNestedIndirect) {
  constexpr uint64_t kTable = 0x40000, kInner = 0x41000;
  ring_.set_desc_at(kInner, 0, kBufferBase, 1, 0);
  ring_.set_desc_at(kTable, 0, kInner, 16, kDescFIndirect);
  ring_.set_desc(0, kTable, 16, kDescFIndirect);
  expect_refused(0, "nested indirect");
}

TEST_F(DescriptorChainTest, SecurityCheck5_RefusesIndirectWithNext) {
  ring_.set_desc_at(0x40000, 0, kBufferBase, 1, 0);
  ring_.set_desc(0, 0x40000, 16, kDescFIndirect | kDescFNext, 1);
  ring_.set_desc(1, kBufferBase, 1, 0);
  expect_refused(0, "indirect descriptor with NEXT");
}

TEST_F(DescriptorChainTest, SecurityCheck5_RefusesMoreEntriesThanQueueSize) {
  ring_.set_desc(0, 0x40000, 17 * 16, kDescFIndirect);
  expect_refused(0, "indirect table longer than the queue");
}

TEST_F(DescriptorChainTest, SecurityCheck5_RefusesIndirectTableOutsideRam) {
  ring_.set_desc(0, kRegion0Size - 16, 32, kDescFIndirect);
  expect_refused(0, "indirect table outside guest RAM");
  ring_.set_desc(1, UINT64_MAX - 15, 32, kDescFIndirect);
  expect_refused(1, "indirect table outside guest RAM");
}

TEST_F(DescriptorChainTest, SecurityCheck5_RefusesIndirectWhenNotNegotiated) {
  ring_.set_desc_at(0x40000, 0, kBufferBase, 1, 0);
  ring_.set_desc(0, 0x40000, 16, kDescFIndirect);
  expect_refused(0, "indirect descriptor not negotiated", /*indirect=*/false);
}

}  // namespace
}  // namespace carapace::virtio
