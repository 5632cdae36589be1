// boot_params for the Linux 64-bit boot protocol (Documentation/arch/x86/boot.rst).
#include "vmm/boot/zero_page.h"

#include <gtest/gtest.h>

#include <cstddef>

namespace carapace {
namespace {

// The offsets the kernel reads, from the boot protocol and arch/x86/include/uapi/asm/bootparam.h.
static_assert(sizeof(boot_params) == 4096);
static_assert(offsetof(boot_params, e820_entries) == 0x1e8);
static_assert(offsetof(boot_params, hdr) == 0x1f1);
static_assert(offsetof(boot_params, e820_table) == 0x2d0);
static_assert(offsetof(boot_params, hdr.boot_flag) == 0x1fe);
static_assert(offsetof(boot_params, hdr.header) == 0x202);
static_assert(offsetof(boot_params, hdr.type_of_loader) == 0x210);
static_assert(offsetof(boot_params, hdr.loadflags) == 0x211);
static_assert(offsetof(boot_params, hdr.ramdisk_image) == 0x218);
static_assert(offsetof(boot_params, hdr.ramdisk_size) == 0x21c);
static_assert(offsetof(boot_params, hdr.cmd_line_ptr) == 0x228);
static_assert(offsetof(boot_params, hdr.kernel_alignment) == 0x230);
static_assert(offsetof(boot_params, hdr.cmdline_size) == 0x238);
static_assert(sizeof(boot_e820_entry) == 20);

ZeroPageInputs sample() {
  ZeroPageInputs in;
  in.cmdline_addr = 0x20000;
  in.cmdline_size = 42;
  in.initrd = {0x7fe00000, 0x123456};
  in.e820 = {{0, 0x9fc00, E820Type::kRam},
             {0x100000, 0x7ff00000, E820Type::kRam},
             {0xfec00000, 0x1000, E820Type::kReserved}};
  return in;
}

TEST(ZeroPageTest, FillsSetupHeader) {
  auto bp = build_zero_page(sample());
  ASSERT_TRUE(bp.ok()) << bp.error().message;
  EXPECT_EQ(bp->hdr.boot_flag, 0xaa55);
  EXPECT_EQ(bp->hdr.header, 0x53726448u);  // "HdrS"
  EXPECT_EQ(bp->hdr.type_of_loader, 0xff);
  EXPECT_TRUE(bp->hdr.loadflags & LOADED_HIGH);
  EXPECT_EQ(bp->hdr.kernel_alignment, 0x1000000u);
  EXPECT_EQ(bp->hdr.cmd_line_ptr, 0x20000u);
  EXPECT_EQ(bp->hdr.cmdline_size, 42u);
  EXPECT_EQ(bp->hdr.ramdisk_image, 0x7fe00000u);
  EXPECT_EQ(bp->hdr.ramdisk_size, 0x123456u);
  EXPECT_EQ(bp->ext_cmd_line_ptr, 0u);
  EXPECT_EQ(bp->ext_ramdisk_image, 0u);
}

TEST(ZeroPageTest, CopiesE820Map) {
  auto in = sample();
  auto bp = build_zero_page(in);
  ASSERT_TRUE(bp.ok());
  ASSERT_EQ(bp->e820_entries, 3);
  for (size_t i = 0; i < in.e820.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(bp->e820_table[i].addr, in.e820[i].addr);
    EXPECT_EQ(bp->e820_table[i].size, in.e820[i].size);
    EXPECT_EQ(bp->e820_table[i].type, static_cast<uint32_t>(in.e820[i].type));
  }
  EXPECT_EQ(bp->e820_table[3].size, 0u);
}

TEST(ZeroPageTest, NoInitrdLeavesRamdiskFieldsZero) {
  auto in = sample();
  in.initrd = {};
  auto bp = build_zero_page(in);
  ASSERT_TRUE(bp.ok());
  EXPECT_EQ(bp->hdr.ramdisk_image, 0u);
  EXPECT_EQ(bp->hdr.ramdisk_size, 0u);
}

TEST(ZeroPageTest, EveryOtherByteIsZero) {
  auto bp = build_zero_page(sample());
  ASSERT_TRUE(bp.ok());
  boot_params copy = *bp;
  copy.hdr.boot_flag = 0;
  copy.hdr.header = 0;
  copy.hdr.type_of_loader = 0;
  copy.hdr.loadflags = 0;
  copy.hdr.kernel_alignment = 0;
  copy.hdr.cmd_line_ptr = 0;
  copy.hdr.cmdline_size = 0;
  copy.hdr.ramdisk_image = 0;
  copy.hdr.ramdisk_size = 0;
  copy.e820_entries = 0;
  for (auto& e : copy.e820_table)
    e = {};
  const auto* p = reinterpret_cast<const uint8_t*>(&copy);
  for (size_t i = 0; i < sizeof copy; ++i)
    ASSERT_EQ(p[i], 0) << "offset " << i;
}

TEST(ZeroPageTest, FullE820TableFitsOneMoreDoesNot) {
  auto in = sample();
  in.e820.assign(E820_MAX_ENTRIES_ZEROPAGE, {0x100000, 0x1000, E820Type::kRam});
  auto full = build_zero_page(in);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->e820_entries, E820_MAX_ENTRIES_ZEROPAGE);
  in.e820.push_back({0x200000, 0x1000, E820Type::kRam});
  EXPECT_FALSE(build_zero_page(in).ok());
}

TEST(ZeroPageTest, RefusesCmdlineAboveFourGiB) {
  auto in = sample();
  in.cmdline_addr = 0x100000000ull;
  EXPECT_FALSE(build_zero_page(in).ok());
}

TEST(ZeroPageTest, RefusesInitrdAboveFourGiB) {
  auto in = sample();
  in.initrd = {0x100000000ull, 0x1000};
  EXPECT_FALSE(build_zero_page(in).ok());
  in.initrd = {0x1000, 0x100000000ull};
  EXPECT_FALSE(build_zero_page(in).ok());
  // Starts below 4 GiB but ends above: ramdisk_image/size cannot describe it.
  in.initrd = {0xfffff000, 0x2000};
  EXPECT_FALSE(build_zero_page(in).ok());
  in.initrd = {0xfffff000, 0x1000};  // ends exactly at 4 GiB
  EXPECT_TRUE(build_zero_page(in).ok());
}

}  // namespace
}  // namespace carapace
