// Workspace mount words and path rules (process_sandbox/share_spec.h), shared by `carapace run
// --isolation process --mount` and the daemon's API, and the `--mount` flag itself.
#include "process_sandbox/share_spec.h"

#include <gtest/gtest.h>

#include "process_sandbox/nodelete_landlock.h"
#include "process_sandbox/process_run_args.h"

namespace carapace {
namespace {

std::string why(const Status& s) {
  return s.ok() ? "" : s.error().message;
}

TEST(ShareSpecTest, ModeWords) {
  for (ShareMode m : {ShareMode::kRo, ShareMode::kRw, ShareMode::kRwNoDelete})
    EXPECT_EQ(parse_share_mode(share_mode_name(m)), m);
  EXPECT_EQ(std::string(share_mode_name(ShareMode::kRwNoDelete)), "rw-nodelete");
  for (const char* bad : {"", "RO", "rw-no-delete", "nodelete", "read-only"})
    EXPECT_FALSE(parse_share_mode(bad)) << bad;
}

TEST(ShareSpecTest, PathSyntaxIsCheckedNotRewritten) {
  for (const char* ok : {"/", "/srv/ws", "/srv/ws/proj", "/a b/c.d", "/x/..y/.z"})
    EXPECT_EQ(why(check_share_path_syntax(ok)), "") << ok;
  const std::pair<std::string, std::string> bad[] = {
      {"", "absolute"},
      {"srv/ws", "absolute"},
      {"./ws", "absolute"},
      {"/srv//ws", "empty component"},
      {"/srv/ws/", "empty component"},
      {"/srv/./ws", "'.' or '..'"},
      {"/srv/ws/..", "'.' or '..'"},
      {"/srv/../etc", "'.' or '..'"},
      {std::string("/srv/w\0s", 8), "NUL"},
      {"/" + std::string(5000, 'a'), "longer than 4096"},
  };
  for (const auto& [path, reason] : bad) {
    const std::string w = why(check_share_path_syntax(path));
    EXPECT_NE(w.find(reason), std::string::npos) << "'" << path << "': " << w;
  }
}

TEST(ShareSpecTest, GuestPathsKeepOutOfTheSandboxesSystem) {
  for (const char* ok : {"/work/data", "/work/a/b", "/mnt/ws", "/tmp/x", "/home/u/proj", "/srv",
                         "/opt/ws", "/workspace", "/tmpfoo", "/procfs"})
    EXPECT_EQ(why(check_guest_path(ok)), "") << ok;
  const std::pair<const char*, const char*> bad[] = {
      {"/", "cannot be /"},
      {"work/data", "absolute"},
      {"/work/../etc", "'.' or '..'"},
      {"/work//data", "empty component"},
      {"/proc", "/proc or beneath"},
      {"/proc/self", "/proc or beneath"},
      {"/sys/fs", "/sys or beneath"},
      {"/dev/shm", "/dev or beneath"},
      {"/run/carapace", "/run or beneath"},
      {"/run/carapace-egress", "/run or beneath"},
      {"/etc", "/etc or beneath"},
      {"/usr/local/x", "/usr or beneath"},
      {"/bin", "/bin or beneath"},
      {"/lib64", "/lib64 or beneath"},
      {"/work", "/work itself"},
      {"/tmp", "/tmp itself"},
      {"/tmp/carapace-egress-ca-1000", "/tmp/carapace*"},
      {"/work/a,b", "','"},
      {"/work/a\nb", "control character"},
  };
  for (const auto& [path, reason] : bad) {
    const std::string w = why(check_guest_path(path));
    EXPECT_NE(w.find(reason), std::string::npos) << path << ": " << w;
  }
  EXPECT_NE(why(check_guest_path("/work/" + std::string(256, 'n'))).find("longer than 255"),
            std::string::npos);
}

TEST(ShareSpecTest, ListsRefuseNestedSameAndTooMany) {
  EXPECT_TRUE(guest_paths_overlap("/work/a", "/work/a"));
  EXPECT_TRUE(guest_paths_overlap("/work/a", "/work/a/b"));
  EXPECT_TRUE(guest_paths_overlap("/work/a/b", "/work/a"));
  EXPECT_FALSE(guest_paths_overlap("/work/a", "/work/ab"));
  EXPECT_FALSE(guest_paths_overlap("/work/a", "/mnt/a"));

  std::vector<ShareSpec> two = {{"/h/a", "/work/a", ShareMode::kRo},
                                {"/h/b", "/work/a/sub", ShareMode::kRw}};
  EXPECT_EQ(why(check_share_list(two, "mounts")),
            "mounts[1].guest_path: /work/a/sub is the same as or nested with mounts[0] (/work/a)");
  two[1].guest = "/work/a";
  EXPECT_NE(why(check_share_list(two, "mounts")).find("same as or nested"), std::string::npos);
  two[1].guest = "/work/b";
  EXPECT_EQ(why(check_share_list(two, "mounts")), "");
  std::vector<ShareSpec> many;
  for (int i = 0; i < 9; ++i)
    many.push_back({"/h", "/work/m" + std::to_string(i), ShareMode::kRo});
  EXPECT_EQ(why(check_share_list(many, "mounts")), "mounts: at most 8 mounts");
  many.pop_back();
  EXPECT_EQ(why(check_share_list(many, "mounts")), "");
}

TEST(ShareSpecTest, MountFlag) {
  auto s = parse_share_flag("--mount", "host=/srv/ws/p,guest=/work/data,mode=rw-nodelete");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->host, "/srv/ws/p");
  EXPECT_EQ(s->guest, "/work/data");
  EXPECT_EQ(s->mode, ShareMode::kRwNoDelete);
  auto any_order = parse_share_flag("--mount", "guest=/mnt/x,host=/proc/self/fd/3");
  ASSERT_TRUE(any_order.ok()) << any_order.error().message;
  EXPECT_EQ(any_order->host, "/proc/self/fd/3");
  EXPECT_EQ(any_order->mode, ShareMode::kRo) << "ro is the default";
  const std::pair<const char*, const char*> bad[] = {
      {"", "expected host=PATH"},
      {"host=/a", "host= and guest= are required"},
      {"guest=/work/a", "host= and guest= are required"},
      {"host=/a,guest=/work/a,mode=rwx", "mode: expected ro, rw or rw-nodelete"},
      {"host=/a,guest=/work/a,host=/b", "host= given twice"},
      {"host=/a,guest=/work/a,size=1", "got 'size=1'"},
      {"host=a,guest=/work/a", "host=a: must be an absolute path"},
      {"host=/a/../b,guest=/work/a", "'.' or '..'"},
      {"host=/a,guest=/proc/x", "/proc or beneath"},
      {"host=/a,b,guest=/work/a", "got 'b'"},
  };
  for (const auto& [value, reason] : bad) {
    auto r = parse_share_flag("--mount", value);
    ASSERT_FALSE(r.ok()) << value;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
    EXPECT_NE(r.error().message.find(reason), std::string::npos)
        << value << ": " << r.error().message;
  }
}

TEST(ShareSpecTest, RunArgsTakeRepeatedMountsAndCheckTheList) {
  std::vector<std::string> base = {"--rootfs", "/img", "--agent-sock", "/run/a.sock"};
  auto args = base;
  args.insert(args.end(),
              {"--mount", "host=/h/a,guest=/work/a", "--mount", "host=/h/b,guest=/mnt/b,mode=rw"});
  auto r = parse_process_run_args(args);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->cfg.shares.size(), 2u);
  EXPECT_EQ(r->cfg.shares[1].guest, "/mnt/b");
  EXPECT_EQ(r->cfg.shares[1].mode, ShareMode::kRw);
  args = base;
  args.insert(args.end(),
              {"--mount", "host=/h/a,guest=/work/a", "--mount", "host=/h/b,guest=/work/a/b"});
  auto nested = parse_process_run_args(args);
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.error().message.find("nested"), std::string::npos) << nested.error().message;
}

// docs/security.md #66: a kernel without Landlock, or with one too old to refuse truncation, gets
// rw-nodelete refused with a line that says so (never a share without the protection).
TEST(ShareSpecTest, SecurityCheck66_NodeleteNeedsLandlockAbi3) {
  const std::string none = why(nodelete_supported_at(0));
  EXPECT_NE(none.find("needs Landlock"), std::string::npos) << none;
  for (int abi : {1, 2}) {
    auto s = nodelete_supported_at(abi);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().kind, ErrorKind::kInvalidInput);
    EXPECT_NE(s.error().message.find("ABI 3"), std::string::npos) << s.error().message;
    EXPECT_NE(s.error().message.find("has ABI " + std::to_string(abi)), std::string::npos);
  }
  for (int abi : {3, 4, 7})
    EXPECT_TRUE(nodelete_supported_at(abi).ok()) << abi;
  EXPECT_EQ(none.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace carapace
