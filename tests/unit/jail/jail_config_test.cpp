// `carapace jail` pieces that need no privileges: flag parsing and validation, cgroup mount
// detection and planning, the ELF dependency walk, and tree removal that never follows a link.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "jailer/cgroup.h"
#include "jailer/elf_deps.h"
#include "jailer/jail_config.h"
#include "jailer/jail_fs.h"

namespace carapace {
namespace {

std::vector<std::string> base_args() {
  return {"--id", "vm-1", "--exec-file", "/usr/bin/carapace", "--uid", "1000", "--gid", "1001"};
}

TEST(JailArgs, ParsesEveryFlag) {
  auto args = base_args();
  for (const char* a :
       {"--chroot-base",    "/srv/j//", "--bind",      "/images//k:ro", "--bind",      "/data",
        "--netns",          "none",     "--mem-limit", "256",           "--cpu-quota", "150",
        "--pids-max",       "64",       "--nofile",    "512",           "--fsize-mib", "100",
        "--cgroup-version", "2",        "--proc",      "pids",          "--",          "run",
        "--kernel",         "/images/k"})
    args.push_back(a);
  auto cfg = parse_jail_args(args);
  ASSERT_TRUE(cfg.ok()) << cfg.error().describe();
  EXPECT_EQ(cfg->id, "vm-1");
  EXPECT_EQ(cfg->uid, 1000u);
  EXPECT_EQ(cfg->gid, 1001u);
  EXPECT_EQ(cfg->chroot_base, "/srv/j");
  ASSERT_EQ(cfg->binds.size(), 2u);
  EXPECT_EQ(cfg->binds[0].path, "/images/k");
  EXPECT_TRUE(cfg->binds[0].read_only);
  EXPECT_FALSE(cfg->binds[1].read_only);
  EXPECT_EQ(cfg->netns, JailNetNs::kNone);
  EXPECT_EQ(cfg->mem_limit_mib, 256u);
  EXPECT_EQ(cfg->cpu_quota_pct, 150u);
  EXPECT_EQ(cfg->pids_max, 64u);
  EXPECT_EQ(cfg->nofile, 512u);
  EXPECT_EQ(cfg->fsize_mib, 100u);
  EXPECT_EQ(cfg->cgroup_version, CgroupVersion::kV2);
  EXPECT_EQ(cfg->proc, JailProc::kPids);
  EXPECT_EQ(cfg->exec_args, (std::vector<std::string>{"run", "--kernel", "/images/k"}));
  EXPECT_EQ(cfg->root_dir(), "/srv/j/vm-1/root");
}

TEST(JailArgs, Defaults) {
  auto cfg = parse_jail_args(base_args());
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->chroot_base, "/srv/carapace-jail");
  EXPECT_EQ(cfg->netns, JailNetNs::kNew);
  EXPECT_EQ(cfg->proc, JailProc::kNone);
  EXPECT_EQ(cfg->cgroup_version, CgroupVersion::kAuto);
  EXPECT_EQ(cfg->mem_limit_mib, 0u);
  EXPECT_TRUE(cfg->exec_args.empty());
}

TEST(JailArgs, RejectsBadInput) {
  auto with = [](const std::string& flag, const std::string& value) {
    auto a = base_args();
    for (size_t i = 0; i + 1 < a.size(); ++i)
      if (a[i] == flag) a[i + 1] = value;
    if (std::find(a.begin(), a.end(), flag) == a.end()) {
      a.push_back(flag);
      a.push_back(value);
    }
    return parse_jail_args(a);
  };
  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{{"--id", ""},
                                                        {"--id", std::string(65, 'a')},
                                                        {"--id", "a.b"},
                                                        {"--id", "../x"},
                                                        {"--id", "a b"},
                                                        {"--exec-file", "bin/carapace"},
                                                        {"--exec-file", "/a/../b"},
                                                        {"--exec-file", "/a/./b"},
                                                        {"--uid", "0"},
                                                        {"--gid", "0"},
                                                        {"--uid", "4294967295"},
                                                        {"--uid", "1e3"},
                                                        {"--bind", "/"},
                                                        {"--bind", "rel"},
                                                        {"--bind", "/x/.."},
                                                        {"--netns", "host"},
                                                        {"--proc", "all"},
                                                        {"--mem-limit", "0"},
                                                        {"--cpu-quota", "-1"},
                                                        {"--pids-max", "0"},
                                                        {"--nofile", "8"},
                                                        {"--cgroup-version", "v2"},
                                                        {"--chroot-base", "/"},
                                                        {"--bogus", "1"}}) {
    auto r = with(flag, value);
    ASSERT_FALSE(r.ok()) << flag << " " << value;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput) << flag << " " << value;
  }
  EXPECT_FALSE(parse_jail_args({"--id", "x", "--exec-file", "/b", "--uid", "1"}).ok());
  EXPECT_FALSE(parse_jail_args({"--id"}).ok());
  EXPECT_FALSE(parse_jail_args({"stray"}).ok());
}

TEST(JailArgs, PathHelpers) {
  EXPECT_EQ(*normalise_abs_path("f", "//a///b/"), "/a/b");
  EXPECT_TRUE(path_within("/a/b", "/a"));
  EXPECT_TRUE(path_within("/a", "/a"));
  EXPECT_FALSE(path_within("/ab", "/a"));
  EXPECT_TRUE(path_within("/x", "/"));
}

constexpr char kHybridMountinfo[] =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(JailCgroups, ParsesHybridMounts) {
  CgroupMounts m = parse_cgroup_mounts(kHybridMountinfo);
  ASSERT_EQ(m.v1.size(), 4u);  // cpu, cpuacct, memory, pids; not cpuset or name=systemd
  EXPECT_EQ(m.v1[0].mount, "/sys/fs/cgroup/cpu");
  EXPECT_EQ(m.v1[2].controllers, std::vector<std::string>{"memory"});
  EXPECT_EQ(m.unified, "/sys/fs/cgroup/unified");
}

TEST(JailCgroups, PlansLimitsWhereTheControllersAre) {
  CgroupMounts hybrid = parse_cgroup_mounts(kHybridMountinfo);
  CgroupLimits limits{64u << 20, 50, 32};
  auto autoplan = JailCgroups::plan(hybrid, CgroupVersion::kAuto, limits, "j");
  ASSERT_TRUE(autoplan.ok()) << autoplan.error().describe();
  EXPECT_EQ(autoplan->paths().size(), 5u);  // four v1 hierarchies + the unified tree
  EXPECT_EQ(autoplan->paths().back(), "/sys/fs/cgroup/unified/carapace/j");
  auto v1 = JailCgroups::plan(hybrid, CgroupVersion::kV1, limits, "j");
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ(v1->paths().size(), 4u);
  // The hybrid unified tree has no memory controller: a limit there is refused up front.
  auto v2 = JailCgroups::plan(hybrid, CgroupVersion::kV2, limits, "j");
  ASSERT_FALSE(v2.ok());
  EXPECT_NE(v2.error().message.find("memory controller"), std::string::npos);
  EXPECT_TRUE(JailCgroups::plan(hybrid, CgroupVersion::kV2, {}, "j").ok());

  CgroupMounts pure;
  pure.unified = "/sys/fs/cgroup";
  pure.unified_controllers = {"cpu", "io", "memory", "pids"};
  auto p = JailCgroups::plan(pure, CgroupVersion::kAuto, limits, "j");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->paths(), std::vector<std::string>{"/sys/fs/cgroup/carapace/j"});
  EXPECT_FALSE(JailCgroups::plan(pure, CgroupVersion::kV1, {}, "j").ok());
  EXPECT_FALSE(JailCgroups::plan(CgroupMounts{}, CgroupVersion::kAuto, {}, "j").ok());
}

TEST(JailElf, DynamicBinaryBringsInterpreterAndLibc) {
  auto files = elf_runtime_files("/bin/ls");
  ASSERT_TRUE(files.ok()) << files.error().describe();
  ASSERT_FALSE(files->empty());
  EXPECT_NE((*files)[0].jail_path.find("ld-linux"), std::string::npos);
  bool libc = false;
  for (const auto& f : *files)
    libc = libc || f.jail_path.find("/libc.so.6") != std::string::npos;
  EXPECT_TRUE(libc);
  auto not_elf = elf_runtime_files("/etc/passwd");
  ASSERT_FALSE(not_elf.ok());
  EXPECT_EQ(not_elf.error().kind, ErrorKind::kInvalidInput);
}

TEST(JailFs, RemoveTreeDoesNotFollowLinks) {
  const std::string base = ::testing::TempDir() + "jail-fs-" + std::to_string(getpid());
  const std::string outside = base + "-outside";
  ASSERT_TRUE(make_dirs(base + "/root/run/deep", 0755).ok());
  ASSERT_TRUE(make_dirs(outside, 0755).ok());
  std::ofstream(outside + "/keep") << "host file";
  ASSERT_EQ(symlink(outside.c_str(), (base + "/root/run/link").c_str()), 0);
  ASSERT_EQ(symlink((outside + "/keep").c_str(), (base + "/root/run/deep/f").c_str()), 0);
  ASSERT_TRUE(make_mount_point(base + "/root/a/b/file", false).ok());
  ASSERT_TRUE(remove_tree(base).ok());
  struct stat st {};
  EXPECT_NE(lstat(base.c_str(), &st), 0);
  EXPECT_EQ(lstat((outside + "/keep").c_str(), &st), 0) << "followed a link out of the jail";
  EXPECT_TRUE(remove_tree(outside).ok());
  EXPECT_TRUE(remove_tree(base).ok());  // already gone: not an error
}

}  // namespace
}  // namespace carapace

namespace carapace {
namespace {

// A build tree under the host's /tmp can be bound (it is mounted over the jail's private /tmp);
// /tmp itself or a tree holding it cannot (docs/security.md #28).
TEST(JailArgs, BindsUnderTmpAreAllowedButNotTmpItself) {
  const std::string dir = ::testing::TempDir() + "jail-bind-under-tmp";
  mkdir(dir.c_str(), 0755);
  auto with_bind = [&](const std::string& path) {
    auto args = base_args();
    args[3] = "/bin/true";
    args.push_back("--bind");
    args.push_back(path);
    auto cfg = parse_jail_args(args);
    if (!cfg.ok()) return Status(cfg.take_error());  // refused while parsing: fine too
    return check_jail_host_paths(*cfg);
  };
  if (dir.rfind("/tmp/", 0) == 0) {
    Status s = with_bind(dir);
    EXPECT_TRUE(s.ok()) << s.error().describe();
  }
  EXPECT_FALSE(with_bind("/tmp").ok());
  EXPECT_FALSE(with_bind("/").ok());
  EXPECT_FALSE(with_bind("/proc").ok());
}

}  // namespace
}  // namespace carapace
