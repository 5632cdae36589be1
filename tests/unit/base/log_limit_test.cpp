// The VMM's log lines are bounded (docs/security.md #29): a guest that provokes a warning per
// request cannot fill the per-VM log file; dropped lines are counted and reported. The limiter is
// process-wide state, so each check runs in a forked child with stderr on a pipe.
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "common/base/log.h"

namespace carapace {
namespace {

// Runs `body` in a child whose stderr goes to a pipe; returns what it wrote and its exit status.
std::pair<std::string, int> in_child(void (*body)()) {
  int p[2];
  EXPECT_EQ(pipe(p), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    dup2(p[1], STDERR_FILENO);
    body();
    _exit(0);
  }
  close(p[1]);
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = read(p[0], buf, sizeof buf)) > 0)
    out.append(buf, static_cast<size_t>(n));
  close(p[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {out, status};
}

size_t count_lines(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1))
    ++n;
  return n;
}

TEST(LogLimit, SecurityChecks29AFloodOfWarningsIsBoundedAndCounted) {
  auto [out, status] = in_child([] {
    for (int i = 0; i < 100000; ++i)
      LOG_WARN("guest did something odd %d", i);
    // Every line beyond the burst was dropped and counted.
    if (log_lines_dropped() < 100000 - 400) _exit(3);
    usleep(200'000);  // the bucket refills a few lines: the next one passes and reports drops
    LOG_WARN("after the flood");
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "drop counter too low";
  const size_t written = count_lines(out, "guest did something odd");
  EXPECT_GE(written, 100u);
  EXPECT_LE(written, 400u);  // the burst, plus what refilled while the loop ran
  EXPECT_NE(out.find("log lines dropped (rate limit)"), std::string::npos);
  EXPECT_NE(out.find("after the flood"), std::string::npos);
}

TEST(LogLimit, OrdinaryLoggingIsNotDropped) {
  auto [out, status] = in_child([] {
    for (int i = 0; i < 50; ++i)
      LOG_ERROR("line %d", i);
    if (log_lines_dropped() != 0) _exit(3);
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(count_lines(out, "carapace: error: line "), 50u);
}

}  // namespace
}  // namespace carapace
