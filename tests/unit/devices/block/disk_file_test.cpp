// Image files (opening, locking, what is refused), iovec helpers, and the factory's knobs.
#include "vmm/devices/block/disk_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "tests/unit/devices/block/block_fixture.h"
#include "vmm/devices/block/block_factory.h"
#include "vmm/devices/block/disk_image.h"

namespace carapace::blocktest {
namespace {

using namespace block;

TEST(DiskFileTest, RefusesDirectoriesFifosAndMissingFiles) {
  TempDir dir;
  auto d = open_disk_file("t", dir.file(""), FileMode::kReadOnly);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().kind, ErrorKind::kInvalidInput);
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  auto f = open_disk_file("t", dir.file("fifo"), FileMode::kReadOnly);  // must not hang
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("not a regular file"), std::string::npos);
  auto m = open_disk_file("t", dir.file("missing"), FileMode::kReadWrite);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, ErrorKind::kInvalidInput);
  auto empty = open_disk_file("t", "", FileMode::kReadOnly);
  EXPECT_FALSE(empty.ok());
}

TEST(DiskFileTest, WritersExcludeEachOtherAndReaders) {
  TempDir dir;
  write_file(dir.file("a"), pattern(4096));
  {
    auto w = open_disk_file("t", dir.file("a"), FileMode::kReadWrite);
    ASSERT_TRUE(w.ok());
    EXPECT_FALSE(open_disk_file("t", dir.file("a"), FileMode::kReadWrite).ok());
    EXPECT_FALSE(open_disk_file("t", dir.file("a"), FileMode::kReadOnly).ok());
  }
  auto r1 = open_disk_file("t", dir.file("a"), FileMode::kReadOnly);
  auto r2 = open_disk_file("t", dir.file("a"), FileMode::kReadOnly);  // readers share
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r1->size, 4096u);
  EXPECT_FALSE(open_disk_file("t", dir.file("a"), FileMode::kReadWrite).ok());
}

TEST(DiskFileTest, RawImageOpenChecks) {
  TempDir dir;
  write_file(dir.file("tiny"), std::vector<uint8_t>(100, 0));
  auto tiny = open_raw_image(dir.file("tiny"), true);
  ASSERT_FALSE(tiny.ok());
  EXPECT_EQ(tiny.error().kind, ErrorKind::kInvalidInput);
  write_file(dir.file("ok"), pattern(8192));
  auto ro = open_raw_image(dir.file("ok"), true);
  ASSERT_TRUE(ro.ok());
  EXPECT_TRUE((*ro)->read_only());
  EXPECT_FALSE((*ro)->supports_discard());
  std::vector<uint8_t> buf(512);
  iovec v{buf.data(), buf.size()};
  EXPECT_FALSE((*ro)->write(0, {&v, 1}).ok());
  EXPECT_FALSE((*ro)->read(8192, {&v, 1}).ok());  // past the end: refused again here
  EXPECT_TRUE((*ro)->read(8192 - 512, {&v, 1}).ok());
}

TEST(DiskFileTest, IovSliceAndAdvance) {
  uint8_t a[10], b[20], c[30];
  std::vector<iovec> iov{{a, 10}, {b, 20}, {c, 30}};
  EXPECT_EQ(iov_bytes(iov), 60u);
  std::vector<iovec> out;
  iov_slice(iov, 5, 30, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].iov_base, a + 5);
  EXPECT_EQ(out[0].iov_len, 5u);
  EXPECT_EQ(out[1].iov_len, 20u);
  EXPECT_EQ(out[2].iov_base, c);
  EXPECT_EQ(out[2].iov_len, 5u);
  out.clear();
  iov_slice(iov, 60, 10, out);
  EXPECT_TRUE(out.empty());
  size_t start = 0;
  iov_advance(iov, &start, 12);
  EXPECT_EQ(start, 1u);
  EXPECT_EQ(iov[1].iov_base, b + 2);
  EXPECT_EQ(iov[1].iov_len, 18u);
  iov_advance(iov, &start, 48);
  EXPECT_EQ(start, 3u);
}

TEST(DiskFileTest, ShortFileReadIsAnError) {
  TempDir dir;
  write_file(dir.file("f"), pattern(1000));
  auto f = open_disk_file("t", dir.file("f"), FileMode::kReadOnly);
  ASSERT_TRUE(f.ok());
  std::vector<uint8_t> buf(1024);
  iovec v{buf.data(), buf.size()};
  EXPECT_FALSE(preadv_all(f->fd.get(), 0, {&v, 1}).ok());
  v.iov_len = 1000;
  EXPECT_TRUE(preadv_all(f->fd.get(), 0, {&v, 1}).ok());
}

TEST(BlockFactoryTest, BackendFromEnvironment) {
  ::unsetenv("CARAPACE_BLOCK_BACKEND");
  EXPECT_EQ(*block_backend_from_env(), BlockBackend::kAuto);
  ::setenv("CARAPACE_BLOCK_BACKEND", "sync", 1);
  EXPECT_EQ(*block_backend_from_env(), BlockBackend::kSync);
  ::setenv("CARAPACE_BLOCK_BACKEND", "io_uring", 1);
  EXPECT_EQ(*block_backend_from_env(), BlockBackend::kIoUring);
  ::setenv("CARAPACE_BLOCK_BACKEND", "fast", 1);
  EXPECT_FALSE(block_backend_from_env().ok());
  ::unsetenv("CARAPACE_BLOCK_BACKEND");
}

TEST(BlockFactoryTest, DefaultSerialIsTheFileName) {
  EXPECT_EQ(default_block_serial("/a/b/rootfs.ext4"), "rootfs.ext4");
  EXPECT_EQ(default_block_serial("disk"), "disk");
  EXPECT_EQ(default_block_serial("/x/a-very-long-image-file-name.img"), "a-very-long-image-fi");
}

TEST(BlockFactoryTest, BuildsDevicesAndRefusesBadConfigs) {
  TempDir dir;
  write_file(dir.file("disk.img"), pattern(65536));
  auto loop = std::move(EventLoop::create()).value();
  BlockDeviceConfig cfg;
  cfg.path = dir.file("disk.img");
  cfg.read_only = true;
  auto ro = make_block_device(cfg, *loop);
  ASSERT_TRUE(ro.ok()) << ro.error().describe();
  EXPECT_EQ((*ro)->device_type(), 2u);
  EXPECT_TRUE((*ro)->device_features() & (1u << VIRTIO_BLK_F_RO));
  ro = Result<std::shared_ptr<virtio::VirtioDevice>>(make_error("closed"));

  cfg.overlay_path = dir.file("disk.overlay");
  auto both = make_block_device(cfg, *loop);  // overlay makes a writable disk
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error().kind, ErrorKind::kInvalidInput);
  cfg.read_only = false;
  auto cow = make_block_device(cfg, *loop);
  ASSERT_TRUE(cow.ok()) << cow.error().describe();
  EXPECT_FALSE((*cow)->device_features() & (1u << VIRTIO_BLK_F_RO));

  BlockDeviceConfig missing;
  missing.path = dir.file("nope.img");
  auto m = make_block_device(missing, *loop);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().kind, ErrorKind::kInvalidInput);
}

}  // namespace
}  // namespace carapace::blocktest
