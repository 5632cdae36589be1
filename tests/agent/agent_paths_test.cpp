// docs/security.md #28: paths from API callers with "..", symlinks, /proc, FIFOs or devices, or
// swapped after the check, are refused - and the file system outside the sandbox root is left
// untouched.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "tests/agent/agent_test_util.h"

namespace carapace::testing {
namespace {

class AgentPathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(agent_.started()) << agent_.error();
    write_text_file(agent_.root() + "/inside.txt", "inside");
  }
  void TearDown() override {
    // Nothing outside the root was created, changed or removed.
    EXPECT_EQ(dir_names(agent_.outside()), std::vector<std::string>{"secret"});
    EXPECT_EQ(read_text_file(agent_.outside() + "/secret"), kSecret);
  }
  std::string in_root(const std::string& p) const { return agent_.root() + "/" + p; }

  AgentProcess agent_;
};

TEST_F(AgentPathsTest, SecurityCheck28_DotDotIsRefused) {
  AgentClient c = agent_.connect();
  for (std::string p :
       {"../outside/secret", "sub/../../outside/secret", "..", "./../root", "inside.txt/.."}) {
    SCOPED_TRACE(p);
    EXPECT_EQ(code_of(c.get_file(p)), "path_refused");
    EXPECT_EQ(code_of(c.stat(p)), "path_refused");
    EXPECT_EQ(code_of(c.list(p)), "path_refused");
  }
  EXPECT_EQ(agent_error_code(c.put_file("../outside/new", "x").error()), "path_refused");
  EXPECT_EQ(agent_error_code(c.put_file("../outside/secret", "x").error()), "path_refused");
  AgentExecOptions o;
  o.cwd = "..";
  EXPECT_EQ(code_of(run_exec(c, {"touch", "escaped"}, o)), "path_refused");
  EXPECT_TRUE(c.ping().ok());  // refusals do not close the connection
}

TEST_F(AgentPathsTest, SecurityCheck28_AbsolutePathsOutsideTheRootAreRefused) {
  AgentClient c = agent_.connect();
  for (std::string p :
       {agent_.outside() + "/secret", std::string("/etc/passwd"),
        std::string("/proc/self/root/etc/passwd"), std::string("/proc/self/environ"),
        agent_.root() + "x/inside.txt", std::string("/")}) {
    SCOPED_TRACE(p);
    EXPECT_EQ(code_of(c.get_file(p)), "path_refused");
  }
  EXPECT_EQ(agent_error_code(c.put_file(agent_.outside() + "/new", "x").error()), "path_refused");
  // An absolute path inside the root is fine.
  auto got = c.get_file(agent_.root() + "/inside.txt");
  ASSERT_TRUE(got.ok()) << got.error().describe();
  EXPECT_EQ(*got, "inside");
}

TEST_F(AgentPathsTest, SecurityCheck28_NulBytesInPathsAreRefused) {
  AgentClient c = agent_.connect();
  EXPECT_EQ(code_of(c.get_file(std::string("inside.txt\0/../../x", 19))), "path_refused");
}

TEST_F(AgentPathsTest, SecurityCheck28_SymlinksInsideTheRootAreNotFollowed) {
  ::symlink((agent_.outside() + "/secret").c_str(), in_root("link").c_str());
  ::symlink(agent_.outside().c_str(), in_root("ldir").c_str());
  ::symlink("inside.txt", in_root("relative-link").c_str());
  ::symlink("/proc/self/root", in_root("procroot").c_str());
  AgentClient c = agent_.connect();
  EXPECT_EQ(code_of(c.get_file("link")), "path_refused");
  EXPECT_EQ(code_of(c.get_file("relative-link")), "path_refused");  // any symlink, even inside
  EXPECT_EQ(code_of(c.get_file("ldir/secret")), "path_refused");
  EXPECT_EQ(code_of(c.get_file("procroot/etc/passwd")), "path_refused");
  EXPECT_EQ(code_of(c.list("ldir")), "path_refused");
  EXPECT_EQ(code_of(c.stat("ldir/secret")), "path_refused");
  EXPECT_EQ(agent_error_code(c.put_file("ldir/new", "x").error()), "path_refused");
  EXPECT_EQ(agent_error_code(c.put_file("ldir/deep/new", "x", 0644, true).error()), "path_refused");
  AgentExecOptions o;
  o.cwd = "ldir";
  EXPECT_EQ(code_of(run_exec(c, {"touch", "escaped"}, o)), "path_refused");
}

TEST_F(AgentPathsTest, SecurityCheck28_PutOverASymlinkReplacesTheLinkNotItsTarget) {
  ::symlink((agent_.outside() + "/secret").c_str(), in_root("link").c_str());
  AgentClient c = agent_.connect();
  ASSERT_TRUE(c.put_file("link", "replaced").ok());
  struct stat st;
  ASSERT_EQ(::lstat(in_root("link").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(read_text_file(in_root("link")), "replaced");
}

TEST_F(AgentPathsTest, SecurityCheck28_FifosAndDevicesAreNotReadAsFiles) {
  ASSERT_EQ(::mkfifo(in_root("fifo").c_str(), 0644), 0);
  AgentClient c = agent_.connect();
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(code_of(c.get_file("fifo")), "not_regular_file");  // without waiting for a writer
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  auto st = c.stat("fifo");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->type, "fifo");
  if (::mknod(in_root("zero").c_str(), S_IFCHR | 0644, makedev(1, 5)) == 0) {
    EXPECT_EQ(code_of(c.get_file("zero")), "not_regular_file");
  }
  EXPECT_EQ(code_of(c.get_file(".")), "not_regular_file");
}

struct RaceCounts {
  int ok = 0;
  int refused = 0;
};

// Runs `swap(i)` for i = 0, 1, ... on a thread of its own while this one sends `request(i)` for
// 700 ms, and counts the answers: every refusal must be path_refused or not_found. A check that
// both outcomes happened shows the swap really raced the requests.
RaceCounts race_requests(const std::function<void(int)>& swap,
                         const std::function<Status(int)>& request) {
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    for (int i = 0; !stop; ++i)
      swap(i);
  });
  RaceCounts counts;
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(700);
  for (int i = 0; std::chrono::steady_clock::now() < until; ++i) {
    Status s = request(i);
    if (s.ok()) {
      ++counts.ok;
    } else {
      std::string code = agent_error_code(s.error());
      EXPECT_TRUE(code == "path_refused" || code == "not_found") << s.error().describe();
      ++counts.refused;
    }
  }
  stop = true;
  swapper.join();
  return counts;
}

// A path component swapped between a regular file and a symlink to the outside while the client
// reads it: every answer is the inside content or a refusal, never the secret.
TEST_F(AgentPathsTest, SecurityCheck28_SymlinkSwappedInDuringGetIsRefused) {
  const std::string file_tmp = in_root(".f"), link_tmp = in_root(".l"), target = in_root("flip");
  AgentClient c = agent_.connect();
  RaceCounts counts = race_requests(
      [&](int i) {
        if (i % 2 == 0) {
          write_text_file(file_tmp, "inside");
          ::rename(file_tmp.c_str(), target.c_str());
        } else {
          ::symlink((agent_.outside() + "/secret").c_str(), link_tmp.c_str());
          ::rename(link_tmp.c_str(), target.c_str());
        }
      },
      [&](int) -> Status {
        auto r = c.get_file("flip");
        if (!r.ok()) return r.error();
        EXPECT_EQ(*r, "inside");
        return {};
      });
  EXPECT_GT(counts.ok, 0);
  EXPECT_GT(counts.refused, 0);
}

// A directory swapped (RENAME_EXCHANGE) with a symlink to the outside while the client writes
// into it: no file ever lands outside.
TEST_F(AgentPathsTest, SecurityCheck28_DirectorySwappedForASymlinkDuringPutIsRefused) {
  ::mkdir(in_root("pdir").c_str(), 0755);
  ::symlink(agent_.outside().c_str(), in_root("pdir-swap").c_str());
  AgentClient c = agent_.connect();
  RaceCounts counts = race_requests(
      [&](int) {
        ::renameat2(AT_FDCWD, in_root("pdir").c_str(), AT_FDCWD, in_root("pdir-swap").c_str(),
                    RENAME_EXCHANGE);
      },
      [&](int i) { return c.put_file("pdir/f" + std::to_string(i), "x"); });
  // Both outcomes happened, so the swap really raced the puts; TearDown checks that outside/
  // still holds only "secret".
  EXPECT_GT(counts.ok, 0);
  EXPECT_GT(counts.refused, 0);
}

}  // namespace
}  // namespace carapace::testing
