// Boot GDT: descriptor packing (Intel SDM vol. 3, figure 3-8) and its KVM segment view.
#include "vmm/boot/gdt.h"

#include <gtest/gtest.h>

#include <array>

#include "vmm/memory/layout.h"

namespace carapace {
namespace {

using namespace gdt;

TEST(GdtTest, DescriptorPacksFieldsAtSdmBitPositions) {
  // base 0x12345678, limit 0xabcde, access 0x9b, flags nibble 0xc.
  uint64_t d = descriptor(0xc09b, 0x12345678, 0xabcde);
  EXPECT_EQ(d & 0xffff, 0xbcdeu);              // limit 15:0
  EXPECT_EQ((d >> 16) & 0xffffff, 0x345678u);  // base 23:0
  EXPECT_EQ((d >> 40) & 0xff, 0x9bu);          // access byte
  EXPECT_EQ((d >> 48) & 0xf, 0xau);            // limit 19:16
  EXPECT_EQ((d >> 52) & 0xf, 0xcu);            // G, D/B, L, AVL
  EXPECT_EQ((d >> 56) & 0xff, 0x12u);          // base 31:24
  // The well-known flat 4 GiB code segment.
  EXPECT_EQ(descriptor(0xc09b, 0, 0xfffff), 0x00cf9b000000ffffull);
  // Bits 8-11 of `flags` are not descriptor bits and must not leak into limit 19:16.
  EXPECT_EQ(descriptor(0x0f00, 0, 0), 0u);
}

TEST(GdtTest, Code64SegmentIsLongModeRing0) {
  auto table = boot_table();
  kvm_segment s = segment_from_descriptor(table[kCode64Selector / 8], kCode64Selector);
  EXPECT_EQ(s.selector, kCode64Selector);
  EXPECT_EQ(s.base, 0u);
  EXPECT_EQ(s.limit, 0xffffffffu);
  EXPECT_EQ(s.g, 1);
  EXPECT_EQ(s.l, 1);
  EXPECT_EQ(s.db, 0);  // L=1 requires D=0
  EXPECT_EQ(s.type, 0xb);
  EXPECT_EQ(s.s, 1);
  EXPECT_EQ(s.dpl, 0);
  EXPECT_EQ(s.present, 1);
  EXPECT_EQ(s.unusable, 0);
}

TEST(GdtTest, Code32AndDataSegmentsAreFlat32Bit) {
  auto table = boot_table();
  kvm_segment cs = segment_from_descriptor(table[kCode32Selector / 8], kCode32Selector);
  EXPECT_EQ(cs.l, 0);
  EXPECT_EQ(cs.db, 1);
  EXPECT_EQ(cs.type, 0xb);
  EXPECT_EQ(cs.limit, 0xffffffffu);
  kvm_segment ds = segment_from_descriptor(table[kDataSelector / 8], kDataSelector);
  EXPECT_EQ(ds.selector, kDataSelector);
  EXPECT_EQ(ds.type, 0x3);  // read/write, accessed
  EXPECT_EQ(ds.s, 1);
  EXPECT_EQ(ds.db, 1);
  EXPECT_EQ(ds.l, 0);
  EXPECT_EQ(ds.limit, 0xffffffffu);
  EXPECT_EQ(ds.present, 1);
}

TEST(GdtTest, TssIsBusySystemSegmentWithByteGranularity) {
  auto table = boot_table();
  kvm_segment tr = segment_from_descriptor(table[kTssSelector / 8], kTssSelector);
  EXPECT_EQ(tr.type, 0xb);  // busy 64-bit TSS
  EXPECT_EQ(tr.s, 0);
  EXPECT_EQ(tr.g, 0);
  EXPECT_EQ(tr.limit, 0x67u);
  EXPECT_EQ(tr.present, 1);
  EXPECT_EQ(table[kTssSelector / 8 + 1], 0u);
}

TEST(GdtTest, NullDescriptorIsUnusable) {
  kvm_segment s = segment_from_descriptor(0, 0);
  EXPECT_EQ(s.present, 0);
  EXPECT_EQ(s.unusable, 1);
}

TEST(GdtTest, SegmentDecodesBaseAndByteLimit) {
  kvm_segment s = segment_from_descriptor(descriptor(0x0093, 0xfedcba98, 0x12345), 0x18);
  EXPECT_EQ(s.base, 0xfedcba98u);
  EXPECT_EQ(s.limit, 0x12345u);
  EXPECT_EQ(s.g, 0);
}

TEST(GdtTest, WritesTableAndEmptyIdt) {
  auto m = GuestMemory::create_anonymous({{GuestAddress(0), 0x10000}});
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(m->fill(GuestAddress(0), 0xee, 0x1000).ok());
  ASSERT_TRUE(write_boot_tables(*m).ok());
  auto gdt = m->read_obj<std::array<uint64_t, 6>>(GuestAddress(layout::kGdtAddr));
  ASSERT_TRUE(gdt.ok());
  EXPECT_EQ(*gdt, boot_table());
  EXPECT_EQ((*gdt)[0], 0u);
  EXPECT_EQ((*gdt)[kCode64Selector / 8], 0x00af9b000000ffffull);
  auto idt = m->read_obj<uint64_t>(GuestAddress(layout::kIdtAddr));
  ASSERT_TRUE(idt.ok());
  EXPECT_EQ(*idt, 0u);
  // The GDT ends where the IDT starts: they must not overlap.
  EXPECT_LE(layout::kGdtAddr + sizeof(uint64_t) * 6, layout::kIdtAddr);
}

}  // namespace
}  // namespace carapace
