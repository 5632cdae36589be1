// ConsoleSink: bytes reach the fd in order; a reader that stops reading makes the sink drop and
// count bytes instead of growing (docs/security.md #29); close() writes out what was accepted.
#include "vmm/devices/serial/console_sink.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "tests/unit/devices/serial/pipe_reader.h"

namespace carapace {
namespace {

using testing::PipeReader;

void put_all(ConsoleSink& sink, const std::string& s) {
  for (char c : s)
    sink.put(static_cast<uint8_t>(c));
}

TEST(ConsoleSinkTest, CloseFlushesPartialLine) {
  PipeReader pipe;
  ASSERT_TRUE(pipe.ok());
  pipe.start();
  auto sink = std::make_unique<ConsoleSink>(pipe.write_fd(), /*owned=*/true);
  put_all(*sink, "hello\nworld");  // no newline at the end: only close() forces it out
  sink->close();
  EXPECT_EQ(sink->written(), 11u);
  EXPECT_EQ(sink->dropped(), 0u);
  sink.reset();  // closes the write end
  EXPECT_EQ(pipe.finish(), "hello\nworld");
}

TEST(ConsoleSinkTest, PutsAfterCloseAreDroppedAndCounted) {
  PipeReader pipe;
  ASSERT_TRUE(pipe.ok());
  pipe.start();
  auto sink = std::make_unique<ConsoleSink>(pipe.write_fd(), true);
  put_all(*sink, "ab");
  sink->close();
  put_all(*sink, "cde");
  sink->close();  // idempotent
  EXPECT_EQ(sink->written(), 2u);
  EXPECT_EQ(sink->dropped(), 3u);
  sink.reset();
  EXPECT_EQ(pipe.finish(), "ab");
}

// docs/security.md #29: a file console with a total cap takes that many bytes and no more, however
// long the guest floods; the rest is dropped and counted.
TEST(ConsoleSinkTest, TotalCapDropsAndCountsTheRest) {
  PipeReader pipe;
  ASSERT_TRUE(pipe.ok());
  pipe.start();
  auto sink = std::make_unique<ConsoleSink>(pipe.write_fd(), true, ConsoleSink::kDefaultCapacity,
                                            /*max_total=*/10);
  put_all(*sink, "0123456789abcdef");
  sink->close();
  EXPECT_EQ(sink->written(), 10u);
  EXPECT_EQ(sink->dropped(), 6u);
  sink.reset();
  EXPECT_EQ(pipe.finish(), "0123456789");
}

TEST(ConsoleSinkTest, NegativeFdDiscardsAndCounts) {
  ConsoleSink sink(-1, false);
  put_all(sink, "xyz");
  sink.close();
  EXPECT_EQ(sink.written(), 0u);
  EXPECT_EQ(sink.dropped(), 3u);
}

TEST(ConsoleSinkTest, SecurityCheck29_BlockedReaderBoundsMemoryAndCountsDrops) {
  PipeReader pipe;
  ASSERT_TRUE(pipe.ok());
  // Smallest pipe the kernel allows (one page), and a small sink: the guest floods while nobody
  // reads, so the writer thread blocks in write() and the sink must stop accepting bytes.
  ASSERT_GT(::fcntl(pipe.read_fd(), F_SETPIPE_SZ, 4096), 0);
  const size_t pipe_size = static_cast<size_t>(::fcntl(pipe.read_fd(), F_GETPIPE_SZ));
  constexpr size_t kCapacity = 1024;
  constexpr size_t kFlood = 200000;
  auto sink = std::make_unique<ConsoleSink>(pipe.write_fd(), true, kCapacity);
  std::string sent;
  for (size_t i = 0; i < kFlood; ++i)
    sent.push_back(static_cast<char>(i % 10 == 9 ? '\n' : 'a' + i % 26));
  put_all(*sink, sent);
  // What was accepted is at most what the pipe holds, one chunk in the writer's hands and a full
  // pending buffer; the rest was refused at put() time and counted.
  EXPECT_GE(sink->dropped(), kFlood - (pipe_size + 2 * kCapacity));
  pipe.start();  // the reader wakes up; close() can now write out what was accepted
  sink->close();
  const uint64_t written = sink->written(), dropped = sink->dropped();
  sink.reset();
  const std::string& got = pipe.finish();
  EXPECT_EQ(written + dropped, kFlood) << "every byte is either written or counted as dropped";
  EXPECT_EQ(got.size(), written);
  EXPECT_LE(written, pipe_size + 2 * kCapacity);
  EXPECT_GT(written, 0u);
  // Dropping never reorders: what arrived is a subsequence of what was sent, starting with it.
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.substr(0, 16), sent.substr(0, 16));
  size_t j = 0;
  for (char c : sent)
    if (j < got.size() && got[j] == c) ++j;
  EXPECT_EQ(j, got.size());
}

TEST(ConsoleSinkTest, ReaderGoneDropsInsteadOfFailing) {
  struct sigaction ign {
  }, old{};
  ign.sa_handler = SIG_IGN;  // writes to a pipe without readers fail with EPIPE
  ASSERT_EQ(::sigaction(SIGPIPE, &ign, &old), 0);
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  ::close(fds[0]);
  auto sink = std::make_unique<ConsoleSink>(fds[1], true);
  put_all(*sink, "lost line\n");
  sink->close();
  EXPECT_EQ(sink->written(), 0u);
  EXPECT_EQ(sink->dropped(), 10u);
  ::sigaction(SIGPIPE, &old, nullptr);
}

// A reader that never drains (a paused pager): close() gives up after its grace period instead of
// hanging the VMM's exit, and everything not written is counted as dropped.
TEST(ConsoleSinkTest, StalledReaderDoesNotHangClose) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  ASSERT_GT(::fcntl(fds[1], F_SETPIPE_SZ, 4096), 0);
  auto sink = std::make_unique<ConsoleSink>(fds[1], true, 1 << 20);
  const std::string line(99, 'x');
  for (int i = 0; i < 1000; ++i)
    put_all(*sink, line + "\n");  // 100 KB into a 4 KiB pipe
  auto t0 = std::chrono::steady_clock::now();
  sink->close();
  auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(waited, ConsoleSink::kCloseGrace + std::chrono::seconds(2));
  EXPECT_LE(sink->written(), 4096u);
  EXPECT_EQ(sink->written() + sink->dropped(), 100000u);
  ::close(fds[0]);
}

}  // namespace
}  // namespace carapace
