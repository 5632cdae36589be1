// Snapshot directories: round trip, atomic replacement and leftover cleanup, and the load-time
// checks of docs/security.md #19 and #21 (empty/truncated files, a short memory file, symlinks and
// FIFOs in place of files).
#include "snapshot/snapshot_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tests/unit/snapshot/snapshot_test_util.h"

namespace carapace {
namespace {

using testing::kPage;
using testing::make_memory;
using testing::make_state;
using testing::TempDir;

std::vector<std::string> list(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::string load_error(const std::string& dir) {
  auto r = load_snapshot(dir);
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error().describe();
}

TEST(SnapshotDirTest, RoundTrip) {
  TempDir tmp;
  std::string dir = tmp.sub("snap");  // created by the writer
  auto mem = make_memory({{GuestAddress(0), 256 * kPage}, {GuestAddress(0x1000000), 64 * kPage}});
  testing::stamp_pages(mem, 0x5eed, 5);
  auto info = write_snapshot(dir, make_state(), mem);
  ASSERT_TRUE(info.ok()) << info.error().describe();
  EXPECT_EQ(info->generation, 1u);
  EXPECT_EQ(info->memory_file, "memory-1");
  EXPECT_EQ(info->memory_size, 320 * kPage);
  EXPECT_EQ(info->memory_bytes_written, (52 + 13) * kPage);  // every 5th page of 256, of 64
  EXPECT_EQ(list(dir), (std::vector<std::string>{"memory-1", "state"}));
  struct stat st;
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  auto loaded = load_snapshot(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  StateFile want = make_state();
  want.host_cpu = host_cpu_signature();
  want.memory_generation = 1;
  want.memory = MemoryLayout::of(mem);
  EXPECT_EQ(loaded->state, want);
  auto clone = map_guest_memory_private(loaded->memory);
  ASSERT_TRUE(clone.ok()) << clone.error().describe();
  testing::expect_same_bytes(mem, *clone);
}

TEST(SnapshotDirTest, ReplacementRemovesOldMemoryAndLeftovers) {
  TempDir tmp;
  auto mem = make_memory({{GuestAddress(0), 16 * kPage}});
  ASSERT_TRUE(write_snapshot(tmp.path(), make_state(1), mem).ok());
  // What a crashed writer leaves: a newer partial memory file and a state.tmp. And a file that
  // is none of ours.
  write_file(tmp.sub("memory-7"), {1, 2, 3});
  write_file(tmp.sub("state.tmp"), {4, 5});
  write_file(tmp.sub("notes.txt"), {6});
  write_file(tmp.sub("memory-07"), {6});  // not a name this code writes: left alone
  auto mapped_old = load_snapshot(tmp.path());
  ASSERT_TRUE(mapped_old.ok());
  auto old_ram = map_guest_memory_private(mapped_old->memory);
  ASSERT_TRUE(old_ram.ok());

  ASSERT_TRUE(mem.write_obj(GuestAddress(0), uint64_t{99}).ok());
  auto info = write_snapshot(tmp.path(), make_state(2), mem, {.durable = false});
  ASSERT_TRUE(info.ok()) << info.error().describe();
  EXPECT_EQ(info->generation, 8u);  // past every generation present, partial ones included
  EXPECT_EQ(list(tmp.path()),
            (std::vector<std::string>{"memory-07", "memory-8", "notes.txt", "state"}));
  auto loaded = load_snapshot(tmp.path());
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  EXPECT_EQ(loaded->state.find(SectionType::kVm)->payload[3], 2);
  // A VM still running on the deleted memory file keeps its pages.
  EXPECT_EQ(*old_ram->read_obj<uint64_t>(GuestAddress(0)), 0u);
}

TEST(SnapshotDirTest, OneWriterAtATime) {
  TempDir tmp;
  auto mem = make_memory({{GuestAddress(0), 16 * kPage}});
  ASSERT_TRUE(write_snapshot(tmp.path(), make_state(1), mem).ok());
  UniqueFd held(::open(tmp.path().c_str(), O_RDONLY | O_DIRECTORY));
  ASSERT_EQ(::flock(held.get(), LOCK_EX), 0);
  auto r = write_snapshot(tmp.path(), make_state(2), mem);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("another process"), std::string::npos);
  held.reset();
  EXPECT_TRUE(write_snapshot(tmp.path(), make_state(2), mem).ok());
}

TEST(SnapshotDirTest, SecurityCheck19_MissingEmptyOrTruncatedStateRefused) {
  TempDir tmp;
  EXPECT_NE(load_error(tmp.sub("nope")).find("open snapshot directory"), std::string::npos);
  EXPECT_NE(load_error(tmp.path()).find("open state"), std::string::npos);
  auto mem = make_memory({{GuestAddress(0), 16 * kPage}});
  ASSERT_TRUE(write_snapshot(tmp.path(), make_state(), mem).ok());
  std::ifstream in(tmp.sub("state"), std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  write_file(tmp.sub("state"), {});
  EXPECT_NE(load_error(tmp.path()).find("empty"), std::string::npos);
  for (size_t len : {size_t{1}, size_t{19}, size_t{20}, bytes.size() / 2, bytes.size() - 1}) {
    write_file(tmp.sub("state"), std::vector<uint8_t>(bytes.begin(), bytes.begin() + len));
    auto r = load_snapshot(tmp.path());
    ASSERT_FALSE(r.ok()) << len;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
  }
  write_file(tmp.sub("state"), bytes);
  EXPECT_TRUE(load_snapshot(tmp.path()).ok());
}

TEST(SnapshotDirTest, SecurityCheck21_ShortMemoryFileRefusedAtLoad) {
  TempDir tmp;
  auto mem = make_memory({{GuestAddress(0), 64 * kPage}});
  ASSERT_TRUE(write_snapshot(tmp.path(), make_state(), mem).ok());
  ASSERT_EQ(::truncate(tmp.sub("memory-1").c_str(), 63 * kPage), 0);
  EXPECT_NE(load_error(tmp.path()).find("truncated"), std::string::npos);
  ASSERT_EQ(::truncate(tmp.sub("memory-1").c_str(), 0), 0);
  EXPECT_NE(load_error(tmp.path()).find("truncated"), std::string::npos);
  ASSERT_EQ(::unlink(tmp.sub("memory-1").c_str()), 0);
  EXPECT_NE(load_error(tmp.path()).find("open memory-1"), std::string::npos);
}

TEST(SnapshotDirTest, SymlinksAndFifosRefused) {
  TempDir tmp;
  std::string dir = tmp.sub("snap");
  auto mem = make_memory({{GuestAddress(0), 16 * kPage}});
  ASSERT_TRUE(write_snapshot(dir, make_state(), mem).ok());
  ASSERT_EQ(::rename((dir + "/state").c_str(), tmp.sub("real-state").c_str()), 0);
  ASSERT_EQ(::symlink(tmp.sub("real-state").c_str(), (dir + "/state").c_str()), 0);
  EXPECT_FALSE(load_snapshot(dir).ok());
  ASSERT_EQ(::unlink((dir + "/state").c_str()), 0);
  ASSERT_EQ(::mkfifo((dir + "/state").c_str(), 0600), 0);
  // Must not block waiting for a FIFO writer.
  EXPECT_NE(load_error(dir).find("not a regular file"), std::string::npos);
  ASSERT_EQ(::unlink((dir + "/state").c_str()), 0);
  ASSERT_EQ(::rename(tmp.sub("real-state").c_str(), (dir + "/state").c_str()), 0);
  ASSERT_TRUE(load_snapshot(dir).ok());
  ASSERT_EQ(::rename((dir + "/memory-1").c_str(), tmp.sub("real-mem").c_str()), 0);
  ASSERT_EQ(::symlink(tmp.sub("real-mem").c_str(), (dir + "/memory-1").c_str()), 0);
  EXPECT_FALSE(load_snapshot(dir).ok());
}

}  // namespace
}  // namespace carapace
