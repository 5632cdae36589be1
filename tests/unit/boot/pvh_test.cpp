// PVH start info (Xen public ABI, arch-x86/hvm/start_info.h, version 1) read back from guest RAM.
#include "vmm/boot/pvh.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>

namespace carapace {
namespace {

// Field offsets from the Xen header, which the guest (Linux's pvh.c) reads.
static_assert(offsetof(HvmStartInfo, nr_modules) == 12);
static_assert(offsetof(HvmStartInfo, modlist_paddr) == 16);
static_assert(offsetof(HvmStartInfo, cmdline_paddr) == 24);
static_assert(offsetof(HvmStartInfo, rsdp_paddr) == 32);
static_assert(offsetof(HvmStartInfo, memmap_paddr) == 40);
static_assert(offsetof(HvmStartInfo, memmap_entries) == 48);

constexpr uint64_t kBase = 0x6000;

std::vector<E820Entry> sample_e820() {
  return {{0, 0x9fc00, E820Type::kRam},
          {0x100000, 0x3f00000, E820Type::kRam},
          {0xfec00000, 0x1000, E820Type::kReserved}};
}

class PvhTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = GuestMemory::create_anonymous({{GuestAddress(0), 0x10000}});
    ASSERT_TRUE(m.ok());
    mem_ = std::move(m).value();
  }
  HvmStartInfo info() {
    auto i = mem_.read_obj<HvmStartInfo>(GuestAddress(kBase));
    EXPECT_TRUE(i.ok());
    return i.ok() ? *i : HvmStartInfo{};
  }
  bool all_zero() {
    auto s = mem_.slice(GuestAddress(0), 0x10000);
    return s.ok() && std::all_of(s->begin(), s->end(), [](uint8_t b) { return b == 0; });
  }
  GuestMemory mem_;
};

TEST_F(PvhTest, WritesHeaderAndMemoryMap) {
  auto e820 = sample_e820();
  auto r = write_pvh_start_info(mem_, GuestAddress(kBase), 0x20000, {}, e820);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, kBase);
  HvmStartInfo i = info();
  EXPECT_EQ(i.magic, 0x336ec578u);
  EXPECT_EQ(i.version, 1u);
  EXPECT_EQ(i.flags, 0u);
  EXPECT_EQ(i.cmdline_paddr, 0x20000u);
  EXPECT_EQ(i.rsdp_paddr, 0u);
  EXPECT_EQ(i.nr_modules, 0u);
  EXPECT_EQ(i.modlist_paddr, 0u);
  ASSERT_EQ(i.memmap_entries, 3u);
  EXPECT_EQ(i.memmap_paddr % 8, 0u);
  EXPECT_GE(i.memmap_paddr, kBase + sizeof(HvmStartInfo));
  for (uint32_t k = 0; k < i.memmap_entries; ++k) {
    SCOPED_TRACE(k);
    auto m =
        mem_.read_obj<HvmMemmapEntry>(GuestAddress(i.memmap_paddr + k * sizeof(HvmMemmapEntry)));
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->addr, e820[k].addr);
    EXPECT_EQ(m->size, e820[k].size);
    EXPECT_EQ(m->type, static_cast<uint32_t>(e820[k].type));
    EXPECT_EQ(m->reserved, 0u);
  }
}

TEST_F(PvhTest, InitrdBecomesTheOnlyModule) {
  auto r =
      write_pvh_start_info(mem_, GuestAddress(kBase), 0x20000, {0x3f00000, 0x54321}, sample_e820());
  ASSERT_TRUE(r.ok());
  HvmStartInfo i = info();
  ASSERT_EQ(i.nr_modules, 1u);
  ASSERT_NE(i.modlist_paddr, 0u);
  auto mod = mem_.read_obj<HvmModlistEntry>(GuestAddress(i.modlist_paddr));
  ASSERT_TRUE(mod.ok());
  EXPECT_EQ(mod->paddr, 0x3f00000u);
  EXPECT_EQ(mod->size, 0x54321u);
  EXPECT_EQ(mod->cmdline_paddr, 0u);
  // The module entry and the memory map must not overlap.
  EXPECT_LE(i.modlist_paddr + sizeof(HvmModlistEntry), i.memmap_paddr);
}

TEST_F(PvhTest, FullMemoryMapFitsInOnePage) {
  std::vector<E820Entry> e820(kPvhMaxMemmapEntries, {0x100000, 0x1000, E820Type::kRam});
  e820.back().addr = 0xabc000;
  ASSERT_TRUE(write_pvh_start_info(mem_, GuestAddress(kBase), 0, {1 << 20, 1}, e820).ok());
  HvmStartInfo i = info();
  EXPECT_EQ(i.memmap_entries, kPvhMaxMemmapEntries);
  uint64_t end = i.memmap_paddr + kPvhMaxMemmapEntries * sizeof(HvmMemmapEntry);
  EXPECT_LE(end, kBase + 4096);
  auto last = mem_.read_obj<HvmMemmapEntry>(GuestAddress(end - sizeof(HvmMemmapEntry)));
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->addr, 0xabc000u);
}

TEST_F(PvhTest, RefusesTooManyEntries) {
  std::vector<E820Entry> e820(kPvhMaxMemmapEntries + 1, {0x100000, 0x1000, E820Type::kRam});
  EXPECT_FALSE(write_pvh_start_info(mem_, GuestAddress(kBase), 0, {}, e820).ok());
  EXPECT_TRUE(all_zero());
}

TEST_F(PvhTest, RefusesAreaPastRamWithoutWritingAnything) {
  // The header fits before the end of RAM, the memory map does not.
  EXPECT_FALSE(
      write_pvh_start_info(mem_, GuestAddress(0x10000 - 64), 0, {0x1000, 1}, sample_e820()).ok());
  EXPECT_TRUE(all_zero());
  // An area that wraps past 2^64 must not land at guest address 0.
  EXPECT_FALSE(write_pvh_start_info(mem_, GuestAddress(UINT64_MAX - sizeof(HvmStartInfo) + 1), 0,
                                    {0x1000, 1}, sample_e820())
                   .ok());
  EXPECT_TRUE(all_zero());
}

}  // namespace
}  // namespace carapace
