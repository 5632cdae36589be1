// GuestMemory bounds checks: docs/security.md #1 (addr + len outside RAM, across a gap, overflowing
// 64 bits must be refused without touching a host byte outside the mapping).
#include "vmm/memory/guest_memory.h"

#include <gtest/gtest.h>

#include <array>

namespace carapace {
namespace {

constexpr uint64_t kPage = 4096;

GuestMemory two_regions() {
  // [0, 64 KiB) and [1 MiB, 1 MiB + 64 KiB): a gap in between.
  auto mem = GuestMemory::create_anonymous(
      {{GuestAddress(0), 16 * kPage}, {GuestAddress(0x100000), 16 * kPage}});
  EXPECT_TRUE(mem.ok());
  return std::move(mem).value();
}

TEST(GuestMemoryTest, ReadWriteInsideRegion) {
  auto mem = two_regions();
  ASSERT_TRUE(mem.write_obj(GuestAddress(0x100), uint64_t{0x1122334455667788}).ok());
  auto v = mem.read_obj<uint64_t>(GuestAddress(0x100));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 0x1122334455667788u);
  EXPECT_TRUE(mem.write_obj(GuestAddress(0x100000 + 16 * kPage - 8), uint64_t{1}).ok());
}

TEST(GuestMemoryTest, SecurityCheck1_RefusesAccessPastEndOfRegion) {
  auto mem = two_regions();
  EXPECT_FALSE(mem.write_obj(GuestAddress(16 * kPage - 4), uint64_t{1}).ok());
  EXPECT_FALSE(mem.read_obj<uint32_t>(GuestAddress(16 * kPage)).ok());
  EXPECT_FALSE(mem.slice(GuestAddress(0x100000 + 16 * kPage - 1), 2).ok());
}

TEST(GuestMemoryTest, SecurityCheck1_RefusesAccessStraddlingGap) {
  auto mem = two_regions();
  // Starts in region 0 and would end in region 1: the gap lies between.
  EXPECT_FALSE(mem.slice(GuestAddress(16 * kPage - 8), 0x100000).ok());
  EXPECT_FALSE(mem.contains(GuestAddress(0x80000), 1));  // inside the gap
}

TEST(GuestMemoryTest, SecurityCheck1_RefusesWrapAround) {
  auto mem = two_regions();
  EXPECT_FALSE(mem.slice(GuestAddress(0x10), UINT64_MAX).ok());
  EXPECT_FALSE(mem.slice(GuestAddress(UINT64_MAX - 3), 8).ok());
  EXPECT_FALSE(mem.contains(GuestAddress(UINT64_MAX), 2));
}

TEST(GuestMemoryTest, ZeroLengthAtRegionEndIsAllowedButNotBeyond) {
  auto mem = two_regions();
  EXPECT_TRUE(mem.slice(GuestAddress(16 * kPage), 0).ok());
  EXPECT_FALSE(mem.slice(GuestAddress(16 * kPage + 1), 0).ok());
}

TEST(GuestMemoryTest, FailedWriteChangesNothing) {
  auto mem = two_regions();
  ASSERT_TRUE(mem.fill(GuestAddress(16 * kPage - 16), 0xaa, 16).ok());
  std::array<uint8_t, 32> data{};
  EXPECT_FALSE(mem.write(GuestAddress(16 * kPage - 16), data).ok());
  auto back = mem.read_obj<std::array<uint8_t, 16>>(GuestAddress(16 * kPage - 16));
  ASSERT_TRUE(back.ok());
  for (uint8_t b : *back)
    EXPECT_EQ(b, 0xaa);
}

TEST(GuestMemoryTest, RejectsBadLayouts) {
  EXPECT_FALSE(GuestMemory::create_anonymous({{GuestAddress(0), 0}}).ok());
  EXPECT_FALSE(GuestMemory::create_anonymous({{GuestAddress(1), kPage}}).ok());
  EXPECT_FALSE(GuestMemory::create_anonymous({{GuestAddress(0), kPage + 1}}).ok());
  EXPECT_FALSE(
      GuestMemory::create_anonymous({{GuestAddress(0), 2 * kPage}, {GuestAddress(kPage), kPage}})
          .ok());
  EXPECT_FALSE(
      GuestMemory::create_anonymous({{GuestAddress(UINT64_MAX - kPage + 1), 2 * kPage}}).ok());
}

}  // namespace
}  // namespace carapace
