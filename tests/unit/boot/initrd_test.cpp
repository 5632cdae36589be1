// Initrd placement: page aligned, as high as Linux allows in low RAM, never over the kernel.
#include "vmm/boot/initrd.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/base/unique_fd.h"
#include "vmm/memory/layout.h"
#include "vmm/memory/ram_layout.h"

namespace carapace {
namespace {

using namespace layout;

GuestMemory ram(uint64_t size) {
  auto m = GuestMemory::create_anonymous({{GuestAddress(0), size}});
  EXPECT_TRUE(m.ok());
  return std::move(m).value();
}

TEST(InitrdTest, PlacedPageAlignedAtTopOfSmallGuest) {
  auto mem = ram(64 * kMiB);
  auto p = place_initrd(mem, 12345, 4 * kMiB);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->size, 12345u);
  EXPECT_EQ(p->addr % kPageSize, 0u);
  EXPECT_LE(p->addr + p->size, 64 * kMiB);
  EXPECT_GT(p->addr + p->size + kPageSize, 64 * kMiB) << "not as high as possible";
  EXPECT_EQ(p->addr, 64 * kMiB - 4 * kPageSize);  // 12345 bytes need four pages
}

TEST(InitrdTest, StaysBelowTwoGiBInLargeGuest) {
  // 3 GiB below the MMIO hole and 3 GiB above it; MAP_NORESERVE RAM is never touched here.
  auto regions = ram_regions(6 * kGiB);
  ASSERT_TRUE(regions.ok());
  auto mem = GuestMemory::create_anonymous(*regions);
  ASSERT_TRUE(mem.ok());
  auto p = place_initrd(*mem, 10 * kMiB, 16 * kMiB);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->addr, 2 * kGiB - 10 * kMiB);
  EXPECT_LE(p->addr + p->size - 1, kInitrdAddrMax);
}

TEST(InitrdTest, NeverBelowKernelEnd) {
  auto mem = ram(16 * kMiB);
  // Exactly fits between the (page-rounded) kernel end and the top of RAM.
  uint64_t kernel_end = 8 * kMiB - 100;
  auto p = place_initrd(mem, 8 * kMiB, kernel_end);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->addr, 8 * kMiB);
  // One byte more and it would overlap the kernel.
  EXPECT_FALSE(place_initrd(mem, 8 * kMiB + 1, kernel_end).ok());
  // The kernel's last page is not shared with the initrd.
  auto q = place_initrd(mem, 8 * kMiB - 1, 8 * kMiB + 1);
  EXPECT_FALSE(q.ok());
}

TEST(InitrdTest, RefusesEmptyAndTooBig) {
  auto mem = ram(16 * kMiB);
  EXPECT_FALSE(place_initrd(mem, 0, 2 * kMiB).ok());
  auto big = place_initrd(mem, 17 * kMiB, 2 * kMiB);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("--mem"), std::string::npos);
  EXPECT_FALSE(place_initrd(mem, UINT64_MAX, 0).ok());
}

TEST(InitrdTest, RefusesWithNoMemory) {
  GuestMemory empty;
  EXPECT_FALSE(place_initrd(empty, 4096, 0).ok());
}

TEST(InitrdTest, LoadCopiesFileContents) {
  auto mem = ram(16 * kMiB);
  char path[] = "/tmp/carapace_initrd_XXXXXX";
  UniqueFd fd(::mkstemp(path));
  ASSERT_TRUE(fd.valid());
  std::vector<uint8_t> data(10000);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<uint8_t>(i * 13);
  ASSERT_EQ(::write(fd.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
  auto p = load_initrd(path, mem, 2 * kMiB);
  ::unlink(path);
  ASSERT_TRUE(p.ok()) << p.error().message;
  std::vector<uint8_t> back(data.size());
  ASSERT_TRUE(mem.read(GuestAddress(p->addr), back).ok());
  EXPECT_EQ(back, data);
}

TEST(InitrdTest, LoadRefusesDirectoryMissingAndEmptyFile) {
  auto mem = ram(16 * kMiB);
  EXPECT_FALSE(load_initrd("/", mem, 2 * kMiB).ok());
  auto missing = load_initrd("/nonexistent/initrd", mem, 2 * kMiB);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().sys_errno, ENOENT);
  char path[] = "/tmp/carapace_initrd_XXXXXX";
  UniqueFd fd(::mkstemp(path));
  ASSERT_TRUE(fd.valid());
  auto empty = load_initrd(path, mem, 2 * kMiB);
  ::unlink(path);
  EXPECT_FALSE(empty.ok());
}

}  // namespace
}  // namespace carapace
