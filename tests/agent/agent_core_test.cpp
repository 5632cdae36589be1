// Pure parts of the agent and its protocol: flags, the kernel command line, base64, framing,
// error codes, request-path checks, and `carapace agent` flag parsing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "clients/agent/agent_command.h"
#include "common/agent/base64.h"
#include "common/agent/errors.h"
#include "common/agent/frame.h"
#include "guest/agent/options.h"
#include "guest/agent/sandbox_root.h"

namespace carapace::agent {
namespace {

TEST(AgentOptionsTest, ParsesEveryFlag) {
  auto o = parse_agent_args({"--listen", "unix:/tmp/s", "--token", "abc", "--root", "/srv",
                             "--max-file-bytes", "10", "--max-connections", "3"});
  ASSERT_TRUE(o.ok()) << o.error().describe();
  EXPECT_EQ(o->listen, AgentOptions::Listen::kUnix);
  EXPECT_EQ(o->unix_path, "/tmp/s");
  EXPECT_EQ(o->token, "abc");
  EXPECT_EQ(o->root, "/srv");
  EXPECT_EQ(o->max_file_bytes, 10u);
  EXPECT_EQ(o->max_connections, 3);
  auto v = parse_agent_args({"--listen", "vsock:1024"});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->listen, AgentOptions::Listen::kVsock);
  EXPECT_EQ(v->vsock_port, 1024u);
  EXPECT_EQ(parse_agent_args({})->vsock_port, kAgentVsockPort);
}

TEST(AgentOptionsTest, ListenFd) {
  auto o = parse_agent_args({"--listen", "fd:4"});
  ASSERT_TRUE(o.ok()) << o.error().describe();
  EXPECT_EQ(o->listen, AgentOptions::Listen::kFd);
  EXPECT_EQ(o->listen_fd, 4);
  EXPECT_FALSE(parse_agent_args({"--listen", "fd:2"}).ok());
  EXPECT_FALSE(parse_agent_args({"--listen", "fd:"}).ok());
  EXPECT_FALSE(parse_agent_args({"--listen", "fd:x"}).ok());
}

TEST(AgentOptionsTest, TokenFd) {
  auto o = parse_agent_args({"--listen", "unix:/tmp/s", "--token-fd", "3"});
  ASSERT_TRUE(o.ok()) << o.error().describe();
  EXPECT_EQ(o->token_fd, 3);
  EXPECT_TRUE(o->token.empty());
  EXPECT_EQ(parse_agent_args({})->token_fd, -1);
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"--token-fd", "0"},
                                             {"--token-fd", "2"},
                                             {"--token-fd", "x"},
                                             {"--token-fd", "5000"},
                                             {"--token", "ab", "--token-fd", "3"}}) {
    auto r = parse_agent_args(args);
    EXPECT_FALSE(r.ok()) << args[1];
    if (!r.ok()) {
      EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
    }
  }
}

TEST(AgentOptionsTest, RefusesBadFlags) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"--listen", "tcp:1"},
                                                                {"--listen", "unix:"},
                                                                {"--token", "xyz"},
                                                                {"--token", ""},
                                                                {"--root", "relative"},
                                                                {"--max-connections", "0"},
                                                                {"--bogus", "1"},
                                                                {"--token"},
                                                                {"--max-file-bytes", "-1"}}) {
    auto r = parse_agent_args(args);
    EXPECT_FALSE(r.ok()) << args[0];
    if (!r.ok()) {
      EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
    }
  }
}

TEST(AgentOptionsTest, ReadsTokenAndSelftestFromTheKernelCommandLine) {
  auto c = parse_kernel_cmdline(
      "console=ttyS0 root=/dev/vda ro carapace.token=DEADbeef carapace.selftest=boot-smoke\n");
  EXPECT_EQ(c.token, "DEADbeef");
  EXPECT_EQ(c.selftest, "boot-smoke");
  EXPECT_TRUE(c.problems.empty());
  auto bad = parse_kernel_cmdline("carapace.token=nothex carapace.selftest=../../bin/sh");
  EXPECT_EQ(bad.token, "");
  EXPECT_EQ(bad.selftest, "");
  EXPECT_EQ(bad.problems.size(), 2u);
  EXPECT_FALSE(valid_selftest_name(".hidden"));
  EXPECT_FALSE(valid_selftest_name("a/b"));
  EXPECT_TRUE(valid_token(std::string(kMaxTokenChars, 'a')));
  EXPECT_FALSE(valid_token(std::string(kMaxTokenChars + 1, 'a')));
}

TEST(Base64Test, RoundTripsAndRefusesMalformedText) {
  for (std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"})
    EXPECT_EQ(base64_decode(base64_encode(s)).value_or("?"), s);
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode(std::string("\xff\x00", 2)), "/wA=");
  for (std::string bad : {"Zg", "Zg=", "Z===", "====", "Zm9v YmFy", "Zm9v\nYmFy", "Zm=v", "!!!!"})
    EXPECT_FALSE(base64_decode(bad).has_value()) << bad;
  EXPECT_EQ(base64_decoded_size("Zm9vYg=="), 4u);
}

TEST(FrameTest, RoundTripsAndClassifiesBadFrames) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  FrameLimits limits{64, 1000, 1000};
  std::string payload;
  ASSERT_TRUE(write_frame(sv[0], "{\"a\":1}").ok());
  EXPECT_EQ(read_frame(sv[1], limits, &payload), FrameStatus::kOk);
  EXPECT_EQ(payload, "{\"a\":1}");
  ASSERT_TRUE(send_all(sv[0], std::string("\x41\0\0\0", 4)).ok());
  EXPECT_EQ(read_frame(sv[1], limits, &payload), FrameStatus::kTooLarge);
  ASSERT_TRUE(send_all(sv[0], std::string("\0\0\0\0", 4)).ok());
  EXPECT_EQ(read_frame(sv[1], limits, &payload), FrameStatus::kEmpty);
  EXPECT_EQ(read_frame(sv[1], FrameLimits{64, 10, 10}, &payload), FrameStatus::kTimeout);
  ASSERT_TRUE(send_all(sv[0], std::string("\x05\0\0\0ab", 6)).ok());
  EXPECT_EQ(read_frame(sv[1], FrameLimits{64, 1000, 20}, &payload), FrameStatus::kTimeout);
  ASSERT_TRUE(send_all(sv[0], std::string("\x05\0\0\0ab", 6)).ok());
  ::shutdown(sv[0], SHUT_WR);
  EXPECT_EQ(read_frame(sv[1], limits, &payload), FrameStatus::kTruncated);
  ::close(sv[0]);
  ::close(sv[1]);
  EXPECT_FALSE(write_frame(0, "").ok());
  EXPECT_FALSE(write_frame(0, std::string(kMaxFrameBytes + 1, 'x')).ok());
}

TEST(AgentErrorsTest, CodesComeFromPrefixesOrErrno) {
  Error p = protocol_error(code::kPathRefused, "'x': no");
  EXPECT_EQ(error_code(p), "path_refused");
  EXPECT_EQ(error_detail(p), "'x': no");
  EXPECT_EQ(error_code(sys_error("open", ENOENT)), "not_found");
  EXPECT_EQ(error_code(sys_error("open", ELOOP)), "path_refused");
  EXPECT_EQ(error_code(sys_error("open", EXDEV)), "path_refused");
  EXPECT_EQ(error_code(sys_error("write", EIO)), "io_error");
  EXPECT_EQ(error_code(make_error("send: something")), "io_error");  // not a known code
  EXPECT_TRUE(closes_connection(code::kBadJson));
  EXPECT_FALSE(closes_connection(code::kNotFound));
}

TEST(SandboxRootTest, RequestPathsAreMadeRelativeOrRefused) {
  auto root = SandboxRoot::open("/tmp");
  ASSERT_TRUE(root.ok()) << root.error().describe();
  const std::string base = root->path();
  EXPECT_EQ(*root->relative(""), ".");
  EXPECT_EQ(*root->relative("."), ".");
  EXPECT_EQ(*root->relative("a//b/./c/"), "a/b/c");
  EXPECT_EQ(*root->relative(base + "/x/y"), "x/y");
  EXPECT_EQ(*root->relative(base), ".");
  for (const std::string& bad : std::vector<std::string>{"..", "a/../b", "/etc/passwd",
                                                         base + "x/y", "/", std::string("a\0b", 3)})
    EXPECT_EQ(error_code(root->relative(bad).error()), "path_refused") << bad;
  std::string leaf;
  EXPECT_EQ(error_code(root->open_parent(".", false, &leaf).error()), "is_directory");
}

// A workspace share mounted inside the root (op "mount") is a sub-root: request paths beneath it
// resolve beneath the mount, under the same confinement, and nothing else crosses a mount.
// Runs in a child with its own mount namespace, so the tmpfs standing in for the share goes
// with it; the child's exit status is the number of the first check that failed.
TEST(SandboxRootTest, PathsBeneathARegisteredMountResolveBeneathIt) {
  char tmpl[] = "/tmp/agent-subroot-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string base = tmpl;
  ASSERT_EQ(::mkdir((base + "/work").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((base + "/work/data").c_str(), 0755), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::unshare(CLONE_NEWNS) != 0) _exit(90);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(91);
    if (::mount("none", (base + "/work/data").c_str(), "tmpfs", 0, nullptr) != 0) _exit(92);
    int f = ::open((base + "/work/data/f").c_str(), O_CREAT | O_WRONLY, 0644);
    if (f < 0 || ::write(f, "x", 1) != 1) _exit(93);
    ::close(f);
    auto root = SandboxRoot::open(base + "/work");
    if (!root.ok()) _exit(94);
    // Before registration the mount stops every path (RESOLVE_NO_XDEV).
    auto before = root->open("data/f", O_RDONLY);
    if (before.ok() || error_code(before.error()) != "path_refused") _exit(1);
    if (!root->add_mount("data").ok()) _exit(2);
    if (!root->open("data/f", O_RDONLY).ok()) _exit(3);
    if (!root->open(root->path() + "/data", O_RDONLY | O_DIRECTORY).ok()) _exit(4);
    if (root->open("data/../data/f", O_RDONLY).ok()) _exit(5);
    std::string leaf;
    auto parent = root->open_parent("data/new/sub/g", /*parents=*/true, &leaf);
    if (!parent.ok() || leaf != "g") _exit(6);
    struct stat st {};
    // The directories were made inside the tmpfs, not beneath the mount point underneath it.
    if (::stat((base + "/work/data/new/sub").c_str(), &st) != 0) _exit(7);
    if (root->open_parent("data", false, &leaf).ok()) _exit(8);  // the mount point itself
    if (root->add_mount(".").ok()) _exit(9);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "check " << WEXITSTATUS(status) << " failed";
  // The tmpfs went with the child's namespace: its files never reached the host folder.
  struct stat st {};
  EXPECT_NE(::stat((base + "/work/data/f").c_str(), &st), 0);
  std::string rm = "rm -rf '" + base + "'";
  EXPECT_EQ(std::system(rm.c_str()), 0);
}

}  // namespace
}  // namespace carapace::agent

namespace carapace {
namespace {

TEST(AgentCommandArgsTest, ParsesTransportTokenAndOp) {
  auto a = parse_agent_command_args(
      {"--uds", "/run/vm.sock", "--vsock-port", "1024", "--token", "ab", "exec", "--", "ls"}, "");
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_TRUE(a->vsock);
  EXPECT_EQ(a->socket_path, "/run/vm.sock");
  EXPECT_EQ(a->vsock_port, 1024u);
  EXPECT_EQ(a->token, "ab");
  EXPECT_EQ(a->op, "exec");
  EXPECT_EQ(a->op_args, (std::vector<std::string>{"--", "ls"}));
  auto u = parse_agent_command_args({"--unix", "/tmp/a.sock", "ping"}, "envtoken");
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(u->vsock);
  EXPECT_EQ(u->token, "envtoken");
  auto flag = parse_agent_command_args({"--uds", "/tmp/a.sock", "--unix", "ping"}, "");
  ASSERT_TRUE(flag.ok()) << flag.error().describe();
  EXPECT_FALSE(flag->vsock);
  EXPECT_EQ(flag->socket_path, "/tmp/a.sock");
}

TEST(AgentCommandArgsTest, RefusesMissingSocketOrOp) {
  EXPECT_FALSE(parse_agent_command_args({"ping"}, "").ok());
  EXPECT_FALSE(parse_agent_command_args({"--unix", "/s"}, "").ok());
  EXPECT_FALSE(parse_agent_command_args({"--unix", "/s", "--vsock-port", "x", "ping"}, "").ok());
  EXPECT_FALSE(parse_agent_command_args({"--unix", "ping"}, "").ok());
  EXPECT_TRUE(parse_agent_command_args({"--help"}, "")->help);
}

}  // namespace
}  // namespace carapace
