// docs/security.md #23 and #24: a writer SIGKILLed at any point, or failing on a full disk, a
// file-size limit or a permission error, leaves the previous snapshot loadable, and the new one
// complete or absent. Each writer is a forked child, so the kill and the limits are real.
#include <grp.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "snapshot/snapshot_dir.h"
#include "tests/unit/snapshot/snapshot_test_util.h"

namespace carapace {
namespace {

using testing::kPage;
using testing::make_memory;
using testing::make_state;
using testing::TempDir;

// 16 MiB of RAM, all of it written: a write long enough to be killed half way. Contiguous data on
// purpose: on a file system mounted with online discard (like the development hosts' ext4),
// unlinking a memory file costs ~2 ms per extent, and a page-by-page pattern would make every
// replaced snapshot take seconds to delete.
constexpr uint64_t kRamSize = 16ull << 20;
constexpr int kSkip = 77;

GuestMemory tagged_memory(uint32_t tag) {
  auto mem = make_memory({{GuestAddress(0), kRamSize}});
  testing::stamp_pages(mem, tag, 1);
  return mem;
}

// The tag of the snapshot in `dir`, after checking that its memory is the one written with it;
// -1 if it does not load.
int loaded_tag(const std::string& dir) {
  auto s = load_snapshot(dir);
  EXPECT_TRUE(s.ok()) << s.error().describe();
  if (!s.ok()) return -1;
  const StateSection* vm = s->state.find(SectionType::kVm);
  if (vm == nullptr || vm->payload.size() < 5) return -1;
  uint32_t tag = vm->payload[3] | (uint32_t{vm->payload[4]} << 8);
  auto ram = map_guest_memory_private(s->memory);
  EXPECT_TRUE(ram.ok());
  if (!ram.ok()) return -1;
  for (uint64_t off : {uint64_t{0}, kRamSize / 2, kRamSize - kPage}) {
    uint64_t want = tag ^ off;
    EXPECT_EQ(*ram->read_obj<uint64_t>(GuestAddress(off)), want) << "tag " << tag;
  }
  return static_cast<int>(tag);
}

// Only `state` and one memory file, or (after a crash) leftovers the next write removes.
size_t file_count(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir))
    ++n;
  return n;
}

// Runs `body` in a child process and returns its wait status.
template <typename F>
int in_child(F body) {
  fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return status;
}

int write_in_child(const std::string& dir, uint32_t tag, const WriteOptions& opts = {}) {
  auto mem = tagged_memory(tag);
  return write_snapshot(dir, make_state(tag), mem, opts).ok() ? 0 : 1;
}

WriteStep g_kill_at;
void kill_at_step(WriteStep s) {
  if (s == g_kill_at) ::raise(SIGKILL);
}

TEST(SnapshotCrashTest, SecurityCheck23_KilledAtEveryStep) {
  TempDir tmp;
  ASSERT_EQ(in_child([&] { return write_in_child(tmp.path(), 1); }), 0);
  int current = 1;
  uint32_t next = 2;
  for (WriteStep step : {WriteStep::kMemoryWritten, WriteStep::kStateWritten, WriteStep::kRenamed,
                         WriteStep::kCommitted, WriteStep::kCleanedUp}) {
    uint32_t tag = next++;
    int status = in_child([&] {
      g_kill_at = step;
      return write_in_child(tmp.path(), tag, {.after_step = kill_at_step});
    });
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    // Up to the rename the old snapshot is current; from the rename on, the new one.
    int want = step < WriteStep::kRenamed ? current : static_cast<int>(tag);
    EXPECT_EQ(loaded_tag(tmp.path()), want) << "killed after step " << static_cast<int>(step);
    current = want;
  }
  // A later successful write clears every leftover.
  ASSERT_EQ(in_child([&] { return write_in_child(tmp.path(), 99); }), 0);
  EXPECT_EQ(loaded_tag(tmp.path()), 99);
  EXPECT_EQ(file_count(tmp.path()), 2u);
}

TEST(SnapshotCrashTest, SecurityCheck23_KilledAtRandomTimes) {
  TempDir tmp;
  ASSERT_EQ(in_child([&] { return write_in_child(tmp.path(), 1000); }), 0);
  // How long a whole replacement takes here (fork, RAM setup, write, sync, cleanup).
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(in_child([&] { return write_in_child(tmp.path(), 1); }), 0);
  auto full = std::chrono::steady_clock::now() - t0;
  int64_t full_us = std::chrono::duration_cast<std::chrono::microseconds>(full).count();

  std::mt19937 rng(12345);
  int current = 1, kept_old = 0, got_new = 0, finished = 0;
  constexpr int kIterations = 24;
  for (int i = 0; i < kIterations; ++i) {
    uint32_t tag = static_cast<uint32_t>(i + 2);
    fflush(nullptr);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) ::_exit(write_in_child(tmp.path(), tag));
    // Anywhere from before the child starts to well after a normal write would end.
    std::uniform_int_distribution<int64_t> delay(0, full_us * 3 / 2);
    std::this_thread::sleep_for(std::chrono::microseconds(delay(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status)) {
      ASSERT_EQ(WEXITSTATUS(status), 0);
      ++finished;
    }
    int got = loaded_tag(tmp.path());
    ASSERT_TRUE(got == current || got == static_cast<int>(tag))
        << "iteration " << i << ": loaded " << got << ", old " << current << ", new " << tag;
    (got == current ? kept_old : got_new)++;
    current = got;
  }
  std::printf("write %lld us; %d kills kept the old snapshot, %d left the new one (%d finished)\n",
              static_cast<long long>(full_us), kept_old, got_new, finished);
}

TEST(SnapshotCrashTest, SecurityCheck24_FileSizeLimit) {
  TempDir tmp;
  ASSERT_EQ(in_child([&] { return write_in_child(tmp.path(), 1); }), 0);
  int status = in_child([&] {
    // Below the 16 MiB memory file: the write must fail with EFBIG, not die of SIGXFSZ.
    struct rlimit lim = {1 << 20, 1 << 20};
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) return 3;
    auto mem = tagged_memory(2);
    auto r = write_snapshot(tmp.path(), make_state(2), mem);
    if (r.ok()) return 1;
    return r.error().sys_errno == EFBIG ? 0 : 2;
  });
  ASSERT_TRUE(WIFEXITED(status)) << "writer killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(loaded_tag(tmp.path()), 1);
  EXPECT_EQ(file_count(tmp.path()), 2u);  // nothing of the failed write left
}

TEST(SnapshotCrashTest, SecurityCheck24_DiskFull) {
  TempDir tmp;
  int status = in_child([&] {
    // A 4 MiB tmpfs over the directory, in a mount namespace of this child only.
    if (::unshare(CLONE_NEWNS) != 0) return kSkip;
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return kSkip;
    if (::mount("tmpfs", tmp.path().c_str(), "tmpfs", 0, "size=4m,mode=0700") != 0) return kSkip;
    auto small = make_memory({{GuestAddress(0), kRamSize}});
    testing::stamp_pages(small, 1, 1024);  // 4 pages of data
    if (!write_snapshot(tmp.path(), make_state(1), small).ok()) return 1;
    auto big = tagged_memory(2);  // 16 MiB of data
    auto r = write_snapshot(tmp.path(), make_state(2), big);
    if (r.ok() || r.error().sys_errno != ENOSPC) return 2;
    auto s = load_snapshot(tmp.path());
    if (!s.ok() || s->state.find(SectionType::kVm)->payload[3] != 1) return 3;
    if (file_count(tmp.path()) != 2) return 4;
    // The space is back: the next write succeeds.
    if (!write_snapshot(tmp.path(), make_state(3), small).ok()) return 5;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == kSkip) GTEST_SKIP() << "cannot mount a tmpfs here";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(SnapshotCrashTest, SecurityCheck24_PermissionDenied) {
  TempDir tmp;
  ASSERT_EQ(in_child([&] { return write_in_child(tmp.path(), 1); }), 0);
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0555), 0);
  int status = in_child([&] {
    // root ignores directory permissions: become nobody first.
    if (::geteuid() == 0 && (::setresgid(65534, 65534, 65534) != 0 ||
                             ::setgroups(0, nullptr) != 0 || ::setresuid(65534, 65534, 65534) != 0))
      return 3;
    auto mem = tagged_memory(2);
    auto r = write_snapshot(tmp.path(), make_state(2), mem);
    if (r.ok()) return 1;
    return r.error().sys_errno == EACCES ? 0 : 2;
  });
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0700), 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(loaded_tag(tmp.path()), 1);
  EXPECT_EQ(file_count(tmp.path()), 2u);
}

}  // namespace
}  // namespace carapace
