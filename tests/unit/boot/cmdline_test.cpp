// The kernel command line: joining, trimming, length and content checks, and the NUL in guest RAM.
#include "vmm/boot/cmdline.h"

#include <gtest/gtest.h>

#include <string>

namespace carapace {
namespace {

using namespace std::string_literals;

TEST(CmdlineTest, JoinsWithOneSpaceAndTrims) {
  Cmdline c(256);
  ASSERT_TRUE(c.append("  console=ttyS0   ").ok());
  ASSERT_TRUE(c.append("").ok());
  ASSERT_TRUE(c.append("   ").ok());
  ASSERT_TRUE(c.append("reboot=k panic=1").ok());
  ASSERT_TRUE(c.append(" virtio_mmio.device=4K@0xd0000000:5").ok());
  EXPECT_EQ(c.str(), "console=ttyS0 reboot=k panic=1 virtio_mmio.device=4K@0xd0000000:5");
  EXPECT_EQ(c.size_with_nul(), c.str().size() + 1);
}

TEST(CmdlineTest, RefusesNulAndKeepsLine) {
  Cmdline c(256);
  ASSERT_TRUE(c.append("a").ok());
  auto s = c.append("b\0c"s);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("NUL"), std::string::npos);
  EXPECT_EQ(c.str(), "a");
}

TEST(CmdlineTest, CapacityCountsTheNul) {
  Cmdline exact(8);
  ASSERT_TRUE(exact.append(std::string(7, 'x')).ok());  // 7 bytes + NUL = capacity
  EXPECT_EQ(exact.size_with_nul(), 8u);
  Cmdline over(8);
  EXPECT_FALSE(over.append(std::string(8, 'x')).ok());
  EXPECT_EQ(over.str(), "");
}

TEST(CmdlineTest, SeparatorCountsTowardsCapacity) {
  Cmdline c(8);
  ASSERT_TRUE(c.append("abc").ok());
  // "abc" + ' ' + "def" + NUL = 8 bytes: fits exactly.
  ASSERT_TRUE(c.append("def").ok());
  EXPECT_EQ(c.str(), "abc def");
  // Not even one more character fits; the line is unchanged.
  EXPECT_FALSE(c.append("g").ok());
  EXPECT_EQ(c.str(), "abc def");
}

TEST(CmdlineTest, WritesNulTerminatedString) {
  auto mem = GuestMemory::create_anonymous({{GuestAddress(0), 0x10000}});
  ASSERT_TRUE(mem.ok());
  ASSERT_TRUE(mem->fill(GuestAddress(0x2000), 0xff, 32).ok());
  Cmdline c(64);
  ASSERT_TRUE(c.append("root=/dev/vda").ok());
  ASSERT_TRUE(c.write_to(*mem, GuestAddress(0x2000)).ok());
  char buf[15];
  ASSERT_TRUE(mem->read(GuestAddress(0x2000), {reinterpret_cast<uint8_t*>(buf), sizeof buf}).ok());
  EXPECT_EQ(std::string(buf, 13), "root=/dev/vda");
  EXPECT_EQ(buf[13], '\0');
  EXPECT_EQ(static_cast<uint8_t>(buf[14]), 0xff) << "wrote past the NUL";
}

TEST(CmdlineTest, EmptyLineIsJustNul) {
  auto mem = GuestMemory::create_anonymous({{GuestAddress(0), 0x10000}});
  ASSERT_TRUE(mem.ok());
  ASSERT_TRUE(mem->fill(GuestAddress(0x100), 0xff, 2).ok());
  Cmdline c(64);
  ASSERT_TRUE(c.write_to(*mem, GuestAddress(0x100)).ok());
  EXPECT_EQ(*mem->read_obj<uint8_t>(GuestAddress(0x100)), 0);
  EXPECT_EQ(*mem->read_obj<uint8_t>(GuestAddress(0x101)), 0xff);
}

TEST(CmdlineTest, WriteOutsideRamFails) {
  auto mem = GuestMemory::create_anonymous({{GuestAddress(0), 0x1000}});
  ASSERT_TRUE(mem.ok());
  Cmdline c(64);
  ASSERT_TRUE(c.append("abcd").ok());
  EXPECT_FALSE(c.write_to(*mem, GuestAddress(0x1000 - 4)).ok());  // the NUL would be outside
  EXPECT_TRUE(c.write_to(*mem, GuestAddress(0x1000 - 5)).ok());
}

}  // namespace
}  // namespace carapace
