// `carapace run --isolation process` flags (process_sandbox/process_run_args.h).
#include "process_sandbox/process_run_args.h"

#include <gtest/gtest.h>

namespace carapace {
namespace {

TEST(ProcessRunArgsTest, TakesTheIsolationFlag) {
  std::vector<std::string> a = {"--kernel", "/k", "--isolation", "process", "--mem", "64"};
  auto iso = take_isolation_flag(a);
  ASSERT_TRUE(iso.ok());
  EXPECT_EQ(*iso, RunIsolation::kProcess);
  EXPECT_EQ(a, (std::vector<std::string>{"--kernel", "/k", "--mem", "64"}));
  std::vector<std::string> b = {"--isolation", "microvm", "--kernel", "/k"};
  EXPECT_EQ(*take_isolation_flag(b), RunIsolation::kMicrovm);
  EXPECT_EQ(b, (std::vector<std::string>{"--kernel", "/k"}));
  std::vector<std::string> none = {"--kernel", "/k"};
  EXPECT_EQ(*take_isolation_flag(none), RunIsolation::kMicrovm);
  for (auto bad : std::vector<std::vector<std::string>>{{"--isolation"}, {"--isolation", "vm"}}) {
    auto r = take_isolation_flag(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
  }
}

TEST(ProcessRunArgsTest, ParsesEveryFlag) {
  auto r = parse_process_run_args({"--rootfs",
                                   "/img/rootfs.ext4",
                                   "--agent-sock",
                                   "/run/x//a.sock",
                                   "--id",
                                   "sb-1",
                                   "--token-file",
                                   "/t/tok",
                                   "--mem-limit",
                                   "64",
                                   "--pids-max",
                                   "32",
                                   "--cpu-quota",
                                   "50",
                                   "--tmp-size",
                                   "16",
                                   "--uid",
                                   "300000",
                                   "--gid",
                                   "300001",
                                   "--agent",
                                   "/a/agent",
                                   "--chroot-base",
                                   "/srv/p",
                                   "--cgroup-version",
                                   "1",
                                   "--allow-egress",
                                   "10.0.0.0/8:tcp:443"});
  ASSERT_TRUE(r.ok()) << r.error().describe();
  const ProcessSandboxConfig& c = r->cfg;
  EXPECT_EQ(c.rootfs, "/img/rootfs.ext4");
  EXPECT_EQ(c.agent_sock, "/run/x/a.sock");
  EXPECT_EQ(c.id, "sb-1");
  EXPECT_EQ(c.token_file, "/t/tok");
  EXPECT_EQ(c.mem_limit_mib, 64u);
  EXPECT_EQ(c.pids_max, 32u);
  EXPECT_EQ(c.cpu_quota_pct, 50u);
  EXPECT_EQ(c.tmp_mib, 16u);
  EXPECT_EQ(c.uid, 300000u);
  EXPECT_EQ(c.gid, 300001u);
  EXPECT_EQ(c.agent_exe, "/a/agent");
  EXPECT_EQ(c.chroot_base, "/srv/p");
  EXPECT_EQ(c.cgroup_version, CgroupVersion::kV1);
  // Parsed, and refused later by the sandbox with a clear "not supported" error.
  EXPECT_EQ(c.allow_egress, std::vector<std::string>{"10.0.0.0/8:tcp:443"});
  EXPECT_EQ(c.jail_dir(), "/srv/p/sb-1");
  EXPECT_EQ(c.cgroup_name(), "process-sb-1");
}

TEST(ProcessRunArgsTest, Defaults) {
  auto r = parse_process_run_args({"--rootfs", "/r", "--agent-sock", "/s"});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->cfg.id.empty());
  EXPECT_EQ(r->cfg.mem_limit_mib, 0u);
  EXPECT_EQ(r->cfg.uid, 0u);
  EXPECT_EQ(r->cfg.chroot_base, "/srv/carapace-process");
  EXPECT_TRUE(parse_process_run_args({"--help"})->help);
}

TEST(ProcessRunArgsTest, RefusesBadInput) {
  const std::vector<std::string> base = {"--rootfs", "/r", "--agent-sock", "/s"};
  for (auto extra : std::vector<std::vector<std::string>>{{"--id", "a/b"},
                                                          {"--id", ""},
                                                          {"--id", std::string(65, 'a')},
                                                          {"--rootfs", "rel"},
                                                          {"--agent-sock", "/a/../b"},
                                                          {"--mem-limit", "8"},
                                                          {"--mem-limit", "x"},
                                                          {"--pids-max", "-1"},
                                                          {"--cpu-quota", "0"},
                                                          {"--uid", "0"},
                                                          {"--gid", "5"},
                                                          {"--cgroup-version", "3"},
                                                          {"--chroot-base", "/"},
                                                          {"--kernel", "/k"},
                                                          {"--token-file"}}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = parse_process_run_args(args);
    EXPECT_FALSE(r.ok()) << extra[0];
    if (!r.ok()) {
      EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput) << extra[0];
    }
  }
  EXPECT_FALSE(parse_process_run_args({"--rootfs", "/r"}).ok());
  EXPECT_FALSE(parse_process_run_args({"--agent-sock", "/s"}).ok());
}

TEST(ProcessRunArgsTest, DerivedUidsStayInTheirRange) {
  for (const char* id : {"a", "sandbox-1", "sandbox-2", "x-y-z"}) {
    uid_t u = derived_sandbox_uid(id);
    EXPECT_GE(u, kDerivedUidBase);
    EXPECT_LT(u, kDerivedUidBase + kDerivedUidSpan);
  }
  EXPECT_NE(derived_sandbox_uid("sandbox-1"), derived_sandbox_uid("sandbox-2"));
}

}  // namespace
}  // namespace carapace
