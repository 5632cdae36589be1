// Memory images: sparse files (zero pages left as holes), sealed memfds, MAP_PRIVATE mapping that
// never changes the image, and docs/security.md #21 (an image shorter than RAM refused up front).
#include "snapshot/memory_image.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "tests/unit/snapshot/snapshot_test_util.h"

namespace carapace {
namespace {

using testing::kPage;
using testing::make_memory;
using testing::TempDir;

UniqueFd create(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  EXPECT_TRUE(fd.valid());
  return fd;
}

uint64_t read_u64(int fd, uint64_t off) {
  uint64_t v = 0;
  EXPECT_EQ(::pread(fd, &v, 8, static_cast<off_t>(off)), 8);
  return v;
}

// A file image of `mem`, written and reopened read-only (as load_snapshot hands it out).
MemoryImage file_image(const TempDir& dir, const GuestMemory& mem) {
  std::string path = dir.sub("mem");
  {
    UniqueFd fd = create(path);
    auto w = write_guest_memory(fd.get(), mem);
    EXPECT_TRUE(w.ok()) << w.error().describe();
  }
  return MemoryImage{UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)), MemoryLayout::of(mem)};
}

TEST(MemoryImageTest, ZeroPagesStayHoles) {
  TempDir dir;
  auto mem = make_memory({{GuestAddress(0), 64ull << 20}});
  ASSERT_TRUE(mem.write_obj(GuestAddress(0x1000), uint64_t{0x1111}).ok());
  ASSERT_TRUE(mem.write_obj(GuestAddress((64ull << 20) - 8), uint64_t{0x2222}).ok());
  UniqueFd fd = create(dir.sub("mem"));
  auto written = write_guest_memory(fd.get(), mem);
  ASSERT_TRUE(written.ok()) << written.error().describe();
  EXPECT_EQ(*written, 2 * kPage);

  struct stat st;
  ASSERT_EQ(::fstat(fd.get(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), 64ull << 20);
  EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, 1ull << 20);
  EXPECT_EQ(read_u64(fd.get(), 0x1000), 0x1111u);
  EXPECT_EQ(read_u64(fd.get(), (64ull << 20) - 8), 0x2222u);
  EXPECT_EQ(read_u64(fd.get(), 0x2000), 0u);
}

TEST(MemoryImageTest, RegionsBackToBackAndMappedAtTheirAddresses) {
  TempDir dir;
  auto mem = make_memory({{GuestAddress(0), 64 * kPage}, {GuestAddress(0x100000), 32 * kPage}});
  testing::stamp_pages(mem, 0xabcdef, 3);
  MemoryImage image = file_image(dir, mem);
  ASSERT_TRUE(image.check_size().ok());
  EXPECT_EQ(image.size(), 96 * kPage);
  EXPECT_EQ(image.layout.file_offset(1), 64 * kPage);
  // Region 1's first page sits right after region 0 in the file.
  EXPECT_EQ(read_u64(image.fd.get(), 64 * kPage), 0xabcdefu);

  auto mapped = map_guest_memory_private(image);
  ASSERT_TRUE(mapped.ok()) << mapped.error().describe();
  ASSERT_EQ(mapped->regions().size(), 2u);
  testing::expect_same_bytes(mem, *mapped);
}

TEST(MemoryImageTest, PrivateMappingsAreIsolatedAndLeaveImageUnchanged) {
  TempDir dir;
  auto mem = make_memory({{GuestAddress(0), 16 * kPage}});
  ASSERT_TRUE(mem.write_obj(GuestAddress(0x10), uint64_t{42}).ok());
  MemoryImage image = file_image(dir, mem);
  auto a = map_guest_memory_private(image);
  auto b = map_guest_memory_private(image);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(a->write_obj(GuestAddress(0x10), uint64_t{1}).ok());
  ASSERT_TRUE(a->write_obj(GuestAddress(0x5000), uint64_t{2}).ok());  // a hole page
  EXPECT_EQ(*b->read_obj<uint64_t>(GuestAddress(0x10)), 42u);
  EXPECT_EQ(*b->read_obj<uint64_t>(GuestAddress(0x5000)), 0u);
  EXPECT_EQ(*a->read_obj<uint64_t>(GuestAddress(0x10)), 1u);
  EXPECT_EQ(read_u64(image.fd.get(), 0x10), 42u);
  EXPECT_EQ(read_u64(image.fd.get(), 0x5000), 0u);
}

TEST(MemoryImageTest, MappingsAreNotInheritedByFork) {
  TempDir dir;
  auto mem = make_memory({{GuestAddress(0), 4 * kPage}});
  MemoryImage image = file_image(dir, mem);
  auto m = map_guest_memory_private(image);
  ASSERT_TRUE(m.ok());
  void* addr = m->regions()[0].host_base();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // MADV_DONTFORK: the range is not mapped in the child, so madvise reports ENOMEM.
    bool gone = ::madvise(addr, kPage, MADV_NORMAL) != 0 && errno == ENOMEM;
    ::_exit(gone ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(MemoryImageTest, MemfdImageIsSealedAndMappable) {
  auto mem = make_memory({{GuestAddress(0), 32 * kPage}});
  ASSERT_TRUE(mem.write_obj(GuestAddress(0x3008), uint64_t{77}).ok());
  auto image = memory_image_in_memfd(mem, "test-ram");
  ASSERT_TRUE(image.ok()) << image.error().describe();
  int seals = ::fcntl(image->fd.get(), F_GET_SEALS);
  EXPECT_EQ(seals, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  EXPECT_TRUE(image->check_size().ok());
  uint64_t v = 1;
  EXPECT_LT(::pwrite(image->fd.get(), &v, 8, 0), 0);
  EXPECT_NE(::ftruncate(image->fd.get(), 0), 0);

  auto clone = map_guest_memory_private(*image);
  ASSERT_TRUE(clone.ok()) << clone.error().describe();
  EXPECT_EQ(*clone->read_obj<uint64_t>(GuestAddress(0x3008)), 77u);
  ASSERT_TRUE(clone->write_obj(GuestAddress(0x3008), uint64_t{5}).ok());
  EXPECT_EQ(read_u64(image->fd.get(), 0x3008), 77u);
  // Untouched RAM takes no memory in the memfd either.
  struct stat st;
  ASSERT_EQ(::fstat(image->fd.get(), &st), 0);
  EXPECT_LE(static_cast<uint64_t>(st.st_blocks) * 512, 2 * kPage);
}

TEST(MemoryImageTest, SecurityCheck21_ShortOrLongImageRefused) {
  TempDir dir;
  auto mem = make_memory({{GuestAddress(0), 16 * kPage}});
  MemoryImage image = file_image(dir, mem);
  {
    UniqueFd rw(::open(dir.sub("mem").c_str(), O_RDWR));
    ASSERT_EQ(::ftruncate(rw.get(), 15 * kPage), 0);
  }
  auto s = image.check_size();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("truncated"), std::string::npos);
  EXPECT_FALSE(map_guest_memory_private(image).ok());
  {
    UniqueFd rw(::open(dir.sub("mem").c_str(), O_RDWR));
    ASSERT_EQ(::ftruncate(rw.get(), 17 * kPage), 0);
  }
  EXPECT_FALSE(image.check_size().ok());
  {
    UniqueFd rw(::open(dir.sub("mem").c_str(), O_RDWR));
    ASSERT_EQ(::ftruncate(rw.get(), 0), 0);
  }
  EXPECT_FALSE(map_guest_memory_private(image).ok());
}

}  // namespace
}  // namespace carapace
