// Identity page tables for the Linux 64-bit entry: 1 GiB mapped with 2 MiB pages.
#include "vmm/boot/page_tables.h"

#include <gtest/gtest.h>

#include <array>

#include "vmm/memory/layout.h"

namespace carapace {
namespace {

using namespace layout;
using Table = std::array<uint64_t, 512>;
constexpr uint64_t kPresent = 1, kWritable = 2, kHuge = 1 << 7;

class PageTablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = GuestMemory::create_anonymous({{GuestAddress(0), 2 * kMiB}});
    ASSERT_TRUE(m.ok());
    mem_ = std::move(m).value();
    // Garbage where the tables go: every entry must be written, not just the used ones.
    ASSERT_TRUE(mem_.fill(GuestAddress(kPml4Addr), 0xa5, 3 * kPageSize).ok());
  }
  Table table(uint64_t addr) {
    auto t = mem_.read_obj<Table>(GuestAddress(addr));
    EXPECT_TRUE(t.ok());
    return t.ok() ? *t : Table{};
  }
  GuestMemory mem_;
};

TEST_F(PageTablesTest, ReturnsPml4AsCr3) {
  auto cr3 = write_identity_page_tables(mem_);
  ASSERT_TRUE(cr3.ok());
  EXPECT_EQ(*cr3, kPml4Addr);
  EXPECT_EQ(*cr3 & 0xfff, 0u);
}

TEST_F(PageTablesTest, Pml4AndPdptHaveOneEntryEach) {
  ASSERT_TRUE(write_identity_page_tables(mem_).ok());
  Table pml4 = table(kPml4Addr), pdpt = table(kPdptAddr);
  EXPECT_EQ(pml4[0], kPdptAddr | kPresent | kWritable);
  EXPECT_EQ(pdpt[0], kPdAddr | kPresent | kWritable);
  for (size_t i = 1; i < 512; ++i) {
    ASSERT_EQ(pml4[i], 0u) << "PML4[" << i << "]";
    ASSERT_EQ(pdpt[i], 0u) << "PDPT[" << i << "]";
  }
}

TEST_F(PageTablesTest, PdMapsFirstGiBWithTwoMiBPages) {
  ASSERT_TRUE(write_identity_page_tables(mem_).ok());
  Table pd = table(kPdAddr);
  for (uint64_t i = 0; i < 512; ++i)
    ASSERT_EQ(pd[i], (i * 2 * kMiB) | kPresent | kWritable | kHuge) << "PD[" << i << "]";
}

// Walks the tables the way the MMU does for a 2 MiB mapping.
TEST_F(PageTablesTest, TranslatesAddressesToThemselves) {
  ASSERT_TRUE(write_identity_page_tables(mem_).ok());
  for (uint64_t va : {uint64_t{0}, uint64_t{0x7000}, uint64_t{0x1234567}, kGiB - 1}) {
    uint64_t pml4e = table(kPml4Addr)[(va >> 39) & 511];
    ASSERT_TRUE(pml4e & kPresent);
    uint64_t pdpte = table(pml4e & ~0xfffull)[(va >> 30) & 511];
    ASSERT_TRUE(pdpte & kPresent);
    uint64_t pde = table(pdpte & ~0xfffull)[(va >> 21) & 511];
    ASSERT_TRUE((pde & kPresent) && (pde & kHuge));
    EXPECT_EQ((pde & ~0x1fffffull & ((1ull << 52) - 1)) | (va & 0x1fffff), va);
  }
}

TEST(PageTablesNoRamTest, FailsWhenTablesAreNotInRam) {
  auto m = GuestMemory::create_anonymous({{GuestAddress(kMiB), kMiB}});
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(write_identity_page_tables(*m).ok());
}

}  // namespace
}  // namespace carapace
