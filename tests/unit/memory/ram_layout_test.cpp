#include "vmm/memory/ram_layout.h"

#include <gtest/gtest.h>

#include "vmm/memory/layout.h"

namespace carapace {
namespace {

using namespace layout;

TEST(RamLayoutTest, SmallGuestIsOneRegion) {
  auto r = ram_regions(128 * kMiB);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].start.value, 0u);
  EXPECT_EQ((*r)[0].size, 128 * kMiB);
}

TEST(RamLayoutTest, LargeGuestSplitsAroundMmioHole) {
  auto r = ram_regions(5 * kGiB);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].size, kMmioHoleStart);
  EXPECT_EQ((*r)[1].start.value, kMmioHoleEnd);
  EXPECT_EQ((*r)[1].size, 2 * kGiB);
}

TEST(RamLayoutTest, ExactlyHoleStartIsOneRegion) {
  auto r = ram_regions(kMmioHoleStart);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 1u);
}

TEST(RamLayoutTest, RefusesTinyOrUnalignedSizes) {
  EXPECT_FALSE(ram_regions(kMinMemBytes - kPageSize).ok());
  EXPECT_FALSE(ram_regions(kMinMemBytes + 1).ok());
}

TEST(E820Test, LeavesOutEbdaAndBiosArea) {
  auto mem = GuestMemory::create_anonymous(*ram_regions(64 * kMiB));
  ASSERT_TRUE(mem.ok());
  auto e = build_e820(*mem);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0], (E820Entry{0, kEbdaStart, E820Type::kRam}));
  EXPECT_EQ(e[1], (E820Entry{kHighMemStart, 64 * kMiB - kHighMemStart, E820Type::kRam}));
}

TEST(E820Test, DescribesRamAboveFourGiB) {
  auto regions = ram_regions(4 * kGiB);
  ASSERT_TRUE(regions.ok());
  // Map only small stand-ins: the e820 builder reads region bounds, not contents.
  std::vector<GuestRegion> fake;
  for (auto& s : *regions) {
    auto map = MmapRegion::anonymous(s.size);
    ASSERT_TRUE(map.ok());
    fake.push_back(GuestRegion{s.start, s.size, std::move(map).value()});
  }
  auto mem = GuestMemory::from_regions(std::move(fake));
  ASSERT_TRUE(mem.ok());
  auto e = build_e820(*mem);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[1].addr + e[1].size, kMmioHoleStart);
  EXPECT_EQ(e[2], (E820Entry{kMmioHoleEnd, kGiB, E820Type::kRam}));
}

}  // namespace
}  // namespace carapace
