// virtio-blk through the test guest's driver: the host writes a patterned image, the guest reads
// and checks it, writes its own pattern to the middle of the disk and flushes; the host checks the
// file afterwards. A second drive with ro=on must refuse the write.
#include <gtest/gtest.h>

#include "tests/integration/virtio_test_support.h"

namespace carapace::testing {
namespace {

constexpr uint64_t kImageBytes = 1 << 20;  // 2048 sectors
constexpr uint64_t kWrittenStart = kImageBytes / 2;
constexpr uint64_t kWrittenBytes = 32768;

// The image after the guest's write: its pattern over [1/2, 1/2 + 32 KiB), the original elsewhere.
uint64_t after_write(uint64_t offset) {
  const bool written = offset >= kWrittenStart && offset < kWrittenStart + kWrittenBytes;
  return written ? blk_written_word(offset) : blk_image_word(offset);
}

TEST(VirtioBlkKvm, ReadVerifyWriteFlushGetId) {
  ASSERT_TRUE(kvm_usable());
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string img = dir.file("disk.img");
  ASSERT_TRUE(write_pattern_image(img, kImageBytes));
  auto r = run_virtio("blk", "testguest.blk0.serial=tg-serial-01",
                      {"--drive", "path=" + img + ",serial=tg-serial-01"});
  EXPECT_TRUE(passed(r, "blk"));
  EXPECT_NE(r.out.find("testguest: blk0 rw capacity 2048 sectors"), std::string::npos)
      << describe(r);
  EXPECT_TRUE(has_line(r.out, "testguest: blk0 serial \"tg-serial-01\"")) << describe(r);
  const auto words = read_words(img);
  ASSERT_EQ(words.size() * 8, kImageBytes);
  EXPECT_EQ(first_mismatch(words, after_write), -1) << describe(r);
}

TEST(VirtioBlkKvm, ReadOnlyDriveRefusesWrites) {
  ASSERT_TRUE(kvm_usable());
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string rw = dir.file("rw.img"), ro = dir.file("ro.img");
  ASSERT_TRUE(write_pattern_image(rw, kImageBytes));
  ASSERT_TRUE(write_pattern_image(ro, kImageBytes));
  auto r = run_virtio("blk", "", {"--drive", "path=" + rw, "--drive", "path=" + ro + ",ro=on"});
  EXPECT_TRUE(passed(r, "blk"));
  EXPECT_NE(r.out.find("testguest: blk0 rw capacity"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("testguest: blk1 ro capacity"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("testguest: blk1 ok:"), std::string::npos) << describe(r);
  EXPECT_EQ(first_mismatch(read_words(rw), after_write), -1);
  EXPECT_EQ(first_mismatch(read_words(ro), blk_image_word), -1) << "the read-only image changed";
}

TEST(VirtioBlkKvm, MissingDriveFailsInGuest) {
  ASSERT_TRUE(kvm_usable());
  auto r = run_virtio("blk", "", {"--rng"});
  EXPECT_TRUE(has_line(r.out, "TESTGUEST FAIL blk: no virtio-blk device (run with --drive)"))
      << describe(r);
}

}  // namespace
}  // namespace carapace::testing
