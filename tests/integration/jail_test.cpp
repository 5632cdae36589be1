// The jailer (docs/security.md #30, #32): `carapace jail ... -- run ...` boots the
// test guest as an unprivileged user with no capabilities, in its own namespaces and a minimal
// root, under rlimits and cgroup limits; the jail folder and cgroups go away however the VMM ends.
// These tests need root (namespaces, cgroups, mknod); as another user they fail, never skip.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/integration/proc_status.h"
#include "tests/integration/process_runner.h"
#include "tests/integration/testguest_harness.h"
#include "tests/integration/text_file.h"

namespace carapace::testing {
namespace {

constexpr char kUid[] = "61234";
constexpr char kGid[] = "61235";

std::string base_dir() {
  return "/tmp/carapace-jail-test-" + std::to_string(getpid());
}

::testing::AssertionResult jail_prerequisites() {
  if (geteuid() != 0)
    return ::testing::AssertionFailure() << "the jail tests must run as root (namespaces, cgroups)";
  return kvm_usable();
}

bool exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

std::set<std::string> list_dir(const std::string& path) {
  std::set<std::string> out;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.insert(e->d_name);
    closedir(d);
  }
  return out;
}

std::string first_component(const std::string& path) {
  return path.substr(1, path.find('/', 1) - 1);
}

std::string dir_name(const std::string& path) {
  return path.substr(0, path.rfind('/'));
}

// The cgroup directories a jail uses on this host (v1 hierarchies and/or the unified tree).
std::vector<std::string> cgroup_dirs(const std::string& id) {
  std::vector<std::string> out;
  for (const char* h : {"memory", "cpu", "cpuacct", "pids", "blkio", "unified", ""}) {
    std::string dir = std::string("/sys/fs/cgroup/") + h + (*h ? "/" : "") + "carapace/" + id;
    if (exists(dir)) out.push_back(dir);
  }
  return out;
}

std::vector<std::string> jail_argv(const std::string& id, const std::string& scenario,
                                   std::vector<std::string> jail_flags = {},
                                   std::vector<std::string> run_flags = {}) {
  std::vector<std::string> argv = {carapace_binary(),
                                   "jail",
                                   "--id",
                                   id,
                                   "--exec-file",
                                   carapace_binary(),
                                   "--uid",
                                   kUid,
                                   "--gid",
                                   kGid,
                                   "--chroot-base",
                                   base_dir(),
                                   "--bind",
                                   testguest_image() + ":ro"};
  argv.insert(argv.end(), jail_flags.begin(), jail_flags.end());
  for (const char* a : {"--", "run", "--kernel"})
    argv.push_back(a);
  argv.push_back(testguest_image());
  argv.push_back("--cmdline");
  argv.push_back("testguest.run=" + scenario);
  argv.push_back("--timeout");
  argv.push_back("50");
  argv.insert(argv.end(), run_flags.begin(), run_flags.end());
  return argv;
}

std::string limit_line(int pid, const std::string& name) {
  std::istringstream limits(read_text_file("/proc/" + std::to_string(pid) + "/limits"));
  std::string line;
  while (std::getline(limits, line))
    if (line.rfind(name, 0) == 0) {
      std::istringstream in(line.substr(name.size()));
      std::string soft, hard;
      in >> soft >> hard;
      return soft + " " + hard;
    }
  return "";
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

void expect_cleaned_up(const std::string& id) {
  EXPECT_FALSE(exists(base_dir() + "/" + id)) << "jail folder left behind";
  for (const std::string& d : cgroup_dirs(id))
    ADD_FAILURE() << "cgroup left behind: " << d;
}

class JailKvm : public ::testing::Test {
 protected:
  void TearDown() override {
    // Whatever a failed test left: the base folder is the test's own.
    rmdir(base_dir().c_str());
  }
};

TEST_F(JailKvm, JailedBootInfoPassesAndLeavesNothing) {
  ASSERT_TRUE(jail_prerequisites());
  auto r = run_process(jail_argv("boot-info-1", "boot-info"));
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(has_line(r.out, "TESTGUEST PASS boot-info")) << describe(r);
  expect_cleaned_up("boot-info-1");
}

// docs/security.md #32: uid, capabilities, no_new_privs, namespaces, root contents, rlimits,
// cgroup limits of a live jailed VMM; docs/security.md #30: SIGKILL of it leaves nothing behind.
TEST_F(JailKvm, LiveJailedVmmIsConfinedAndSigkillCleansUp) {
  ASSERT_TRUE(jail_prerequisites());
  const std::string id = "live-1";
  // An fd and an environment variable the caller leaks: neither may reach the jail.
  const std::string marker = ::testing::TempDir() + "jail-leak-marker";
  std::ofstream(marker) << "x";
  int leaked = open(marker.c_str(), O_RDONLY);  // no O_CLOEXEC on purpose
  ASSERT_GE(leaked, 0);
  setenv("CARAPACE_JAIL_TEST_SECRET", "s3cret", 1);
  RunningProcess sup(jail_argv(id, "idle",
                               {"--mem-limit", "512", "--pids-max", "64", "--cpu-quota", "150",
                                "--nofile", "512", "--fsize-mib", "100"},
                               {"--api-sock", "/run/api.sock"}));
  unsetenv("CARAPACE_JAIL_TEST_SECRET");
  close(leaked);
  ASSERT_TRUE(sup.started());
  ASSERT_TRUE(sup.wait_for_output("idle ready", std::chrono::seconds(30))) << sup.err();
  const int vmm = proc_first_child(sup.pid());
  ASSERT_GT(vmm, 0);
  const std::string p = std::to_string(vmm);

  for (int pid : {sup.pid(), vmm})
    for (const std::string& fd : list_dir("/proc/" + std::to_string(pid) + "/fd")) {
      char target[512] = {};
      std::string link = "/proc/" + std::to_string(pid) + "/fd/" + fd;
      if (readlink(link.c_str(), target, sizeof target - 1) > 0) {
        EXPECT_EQ(std::string(target).find("jail-leak-marker"), std::string::npos)
            << "fd " << fd << " of " << pid << " leaked in";
      }
    }
  EXPECT_EQ(read_text_file("/proc/" + p + "/environ"), std::string("PATH=/usr/bin:/bin\0", 19));

  EXPECT_EQ(proc_status_field(vmm, "Uid"),
            std::string(kUid) + "\t" + kUid + "\t" + kUid + "\t" + kUid);
  EXPECT_EQ(proc_status_field(vmm, "Gid"),
            std::string(kGid) + "\t" + kGid + "\t" + kGid + "\t" + kGid);
  EXPECT_EQ(proc_status_field(vmm, "Groups"), "");
  expect_confined(vmm);

  // The root: the listed files at their host paths, /dev with four nodes, /tmp, /run; nothing
  // else (the loader and libraries of a dynamically linked carapace live under lib*, usr).
  const std::string root = "/proc/" + p + "/root";
  std::set<std::string> allowed = {"dev",
                                   "tmp",
                                   "run",
                                   "lib",
                                   "lib64",
                                   "usr",
                                   first_component(carapace_binary()),
                                   first_component(testguest_image())};
  std::set<std::string> top = list_dir(root);
  EXPECT_TRUE(top.count("dev") && top.count("tmp") && top.count("run"));
  for (const std::string& e : top)
    EXPECT_TRUE(allowed.count(e)) << "unexpected /" << e;
  for (const char* host_only : {"etc", "home", "proc", "sys", "root", "var", "srv"})
    EXPECT_FALSE(top.count(host_only)) << host_only;
  EXPECT_EQ(list_dir(root + dir_name(testguest_image())),
            std::set<std::string>({testguest_image().substr(testguest_image().rfind('/') + 1)}));
  EXPECT_TRUE(exists(root + carapace_binary()));
  EXPECT_EQ(list_dir(root + "/dev"), std::set<std::string>({"kvm", "net", "null", "urandom"}));
  EXPECT_EQ(list_dir(root + "/dev/net"), std::set<std::string>({"tun"}));

  // The jail's /run is <jail>/run on the host: the VMM's API socket is reachable there.
  struct stat sock {};
  EXPECT_EQ(stat((base_dir() + "/" + id + "/run/api.sock").c_str(), &sock), 0);
  EXPECT_TRUE(S_ISSOCK(sock.st_mode));

  EXPECT_EQ(limit_line(vmm, "Max open files"), "512 512");
  EXPECT_EQ(limit_line(vmm, "Max file size"), "104857600 104857600");
  EXPECT_EQ(limit_line(vmm, "Max core file size"), "0 0");

  // Cgroup limits, in whichever hierarchy holds each controller here.
  const std::string v1 = "/sys/fs/cgroup/memory/carapace/" + id;
  const std::string v2 = "/sys/fs/cgroup/unified/carapace/" + id;
  if (exists(v1)) {
    EXPECT_EQ(trim(read_text_file(v1 + "/memory.limit_in_bytes")), std::to_string(512u << 20));
    EXPECT_EQ(trim(read_text_file("/sys/fs/cgroup/pids/carapace/" + id + "/pids.max")), "64");
    EXPECT_EQ(trim(read_text_file("/sys/fs/cgroup/cpu/carapace/" + id + "/cpu.cfs_quota_us")),
              "150000");
    EXPECT_NE(read_text_file("/sys/fs/cgroup/pids/carapace/" + id + "/cgroup.procs").find(p),
              std::string::npos);
    if (exists(v2)) {  // a hybrid host: the child was also cloned into the unified tree
      EXPECT_NE(read_text_file(v2 + "/cgroup.procs").find(p), std::string::npos);
    }
  } else {
    const std::string dir = exists(v2) ? v2 : "/sys/fs/cgroup/carapace/" + id;
    EXPECT_EQ(trim(read_text_file(dir + "/memory.max")), std::to_string(512u << 20));
    EXPECT_EQ(trim(read_text_file(dir + "/pids.max")), "64");
    EXPECT_EQ(trim(read_text_file(dir + "/cpu.max")), "150000 100000");
  }

  ASSERT_EQ(kill(vmm, SIGKILL), 0);
  auto r = sup.finish(std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << describe(r);
  EXPECT_NE(r.err.find("killed by signal 9"), std::string::npos) << r.err;
  expect_cleaned_up(id);
}

// docs/security.md #32: `--proc pids` gives the jail a /proc of its own PID namespace with the
// process directories only (what sparse snapshots read: /proc/self/pagemap), none of the host's
// processes and no system-wide files such as /proc/sys or /proc/kcore.
TEST_F(JailKvm, ProcPidsShowsOnlyTheJailsOwnProcesses) {
  ASSERT_TRUE(jail_prerequisites());
  const std::string id = "proc-pids-1";
  RunningProcess sup(jail_argv(id, "idle", {"--proc", "pids"}));
  ASSERT_TRUE(sup.started());
  ASSERT_TRUE(sup.wait_for_output("idle ready", std::chrono::seconds(30))) << sup.err();
  const int vmm = proc_first_child(sup.pid());
  ASSERT_GT(vmm, 0);
  const std::string proc = "/proc/" + std::to_string(vmm) + "/root/proc";
  std::set<std::string> entries = list_dir(proc);
  EXPECT_TRUE(entries.count("1")) << "the VMM is PID 1 of the jail's namespace";
  EXPECT_TRUE(entries.count("self"));
  for (const std::string& e : entries)
    EXPECT_TRUE(e == "self" || e == "thread-self" ||
                e.find_first_not_of("0123456789") == std::string::npos)
        << "unexpected /proc/" << e;
  for (const char* hidden : {"sys", "kcore", "sysrq-trigger", "kallsyms", "mounts", "cpuinfo"})
    EXPECT_FALSE(entries.count(hidden)) << hidden;
  // Only the jail's processes: the host's PID 1 and this test are not there.
  EXPECT_FALSE(entries.count(std::to_string(getpid())));
  EXPECT_LE(entries.size(), 8u);
  EXPECT_NE(read_text_file(proc + "/1/status").find("Seccomp:\t2"), std::string::npos);
  ASSERT_EQ(kill(sup.pid(), SIGTERM), 0);
  auto r = sup.finish(std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << describe(r);
  expect_cleaned_up(id);
}

// docs/security.md #30: a VM past its memory limit dies alone; the supervisor says why and
// cleans up; a neighbouring jailed VM keeps running.
TEST_F(JailKvm, MemoryLimitKillsOnlyThatVm) {
  ASSERT_TRUE(jail_prerequisites());
  RunningProcess neighbour(jail_argv("neighbour", "idle", {"--mem-limit", "512"}));
  ASSERT_TRUE(neighbour.wait_for_output("idle ready", std::chrono::seconds(30))) << neighbour.err();

  auto r = run_process(
      jail_argv("greedy", "idle testguest.mib=256", {"--mem-limit", "64"}, {"--mem", "512"}),
      std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << describe(r);
  EXPECT_NE(r.err.find("memory limit of 64 MiB reached"), std::string::npos) << r.err;
  expect_cleaned_up("greedy");

  const int vmm = proc_first_child(neighbour.pid());
  EXPECT_GT(vmm, 0) << "the neighbouring VM died too";
  // SIGTERM to a supervisor ends its VM (a namespace init ignores it, so the supervisor kills).
  ASSERT_EQ(kill(neighbour.pid(), SIGTERM), 0);
  auto n = neighbour.finish(std::chrono::seconds(20));
  EXPECT_EQ(n.exit_code, 128 + SIGKILL) << describe(n);
  expect_cleaned_up("neighbour");
}

// A SIGKILLed supervisor takes its VM along (parent-death signal) but leaves the jail folder and
// cgroups; the next jail with the same id removes them first.
TEST_F(JailKvm, NextJailCleansUpAfterSupervisorSigkill) {
  ASSERT_TRUE(jail_prerequisites());
  const std::string id = "orphan-1";
  RunningProcess sup(jail_argv(id, "idle", {"--pids-max", "32"}));
  ASSERT_TRUE(sup.wait_for_output("idle ready", std::chrono::seconds(30))) << sup.err();
  const int vmm = proc_first_child(sup.pid());
  ASSERT_GT(vmm, 0);
  ASSERT_EQ(kill(sup.pid(), SIGKILL), 0);
  sup.finish(std::chrono::seconds(10));
  // Dead means gone or a zombie waiting for its new parent (init) to reap it.
  auto dead = [&] {
    std::string state = proc_status_field(vmm, "State");
    return state.empty() || state[0] == 'Z';
  };
  for (int i = 0; i < 2000 && !dead(); ++i)
    usleep(1000);
  EXPECT_TRUE(dead()) << "the VMM outlived its supervisor";
  EXPECT_TRUE(exists(base_dir() + "/" + id + "/root")) << "expected leftovers to clean up";

  auto r = run_process(jail_argv(id, "boot-info"));
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.err.find("removing leftovers"), std::string::npos) << r.err;
  expect_cleaned_up(id);
}

// --cgroup-version 2 uses only the unified tree: limits work where it has the controllers and
// are refused up front (exit 1, nothing created) where it does not (hybrid hosts like this one).
TEST_F(JailKvm, CgroupVersionTwo) {
  ASSERT_TRUE(jail_prerequisites());
  auto r = run_process(jail_argv("v2-plain", "boot-info", {"--cgroup-version", "2"}));
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  expect_cleaned_up("v2-plain");

  std::string unified = exists("/sys/fs/cgroup/unified/cgroup.controllers")
                            ? "/sys/fs/cgroup/unified"
                            : "/sys/fs/cgroup";
  bool has_memory =
      read_text_file(unified + "/cgroup.controllers").find("memory") != std::string::npos;
  auto m = run_process(
      jail_argv("v2-mem", "boot-info", {"--cgroup-version", "2", "--mem-limit", "256"}));
  if (has_memory) {
    EXPECT_EQ(m.exit_code, 0) << describe(m);
  } else {
    EXPECT_EQ(m.exit_code, 1) << describe(m);
    EXPECT_NE(m.err.find("memory controller is not available"), std::string::npos) << m.err;
  }
  expect_cleaned_up("v2-mem");
}

TEST_F(JailKvm, BadInputExitsTwoAndCreatesNothing) {
  ASSERT_TRUE(jail_prerequisites());
  const std::string bin = carapace_binary(), tg = testguest_image(), base = base_dir() + "-bad";
  auto with = [&](std::vector<std::string> flags) {
    std::vector<std::string> argv = {bin, "jail", "--chroot-base", base};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--");
    argv.push_back("run");
    return argv;
  };
  const std::vector<std::string> ok = {"--id", "x", "--exec-file", bin, "--uid", "1", "--gid", "1"};
  auto replace = [&](const std::string& flag, const std::string& value) {
    std::vector<std::string> v = ok;
    for (size_t i = 0; i + 1 < v.size(); ++i)
      if (v[i] == flag) v[i + 1] = value;
    return with(v);
  };
  auto plus = [&](std::vector<std::string> extra) {
    std::vector<std::string> v = ok;
    v.insert(v.end(), extra.begin(), extra.end());
    return with(v);
  };
  const std::vector<std::vector<std::string>> cases = {
      replace("--id", ""),
      replace("--id", "a/b"),
      replace("--id", ".."),
      replace("--id", std::string(65, 'a')),
      replace("--id", "x_y"),
      replace("--exec-file", "carapace"),
      replace("--exec-file", "/nonexistent/carapace"),
      replace("--exec-file", "/etc/../" + bin),
      replace("--exec-file", "/etc/passwd"),
      replace("--uid", "0"),
      replace("--gid", "0"),
      replace("--uid", "-5"),
      replace("--uid", "12x"),
      with({"--id", "x", "--exec-file", bin, "--gid", "1"}),
      plus({"--bind", "relative/path"}),
      plus({"--bind", "/nonexistent"}),
      plus({"--bind", "/dev/kvm"}),
      plus({"--bind", "/"}),
      plus({"--bind", tg + "/../x"}),
      plus({"--bind", dir_name(bin)}),
      plus({"--bind", tg, "--bind", dir_name(tg)}),
      plus({"--netns", "host"}),
      plus({"--mem-limit", "0"}),
      plus({"--cpu-quota", "abc"}),
      plus({"--pids-max", "99999999999"}),
      plus({"--nofile", "1"}),
      plus({"--cgroup-version", "3"}),
      plus({"--frobnicate", "1"}),
      plus({"--chroot-base", "relative"}),
  };
  for (const auto& argv : cases) {
    auto r = run_process(argv, std::chrono::seconds(10));
    std::string cmd;
    for (const auto& a : argv)
      cmd += a + " ";
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << describe(r);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << cmd << "\n" << r.err;
    EXPECT_FALSE(exists(base)) << cmd;
  }
  EXPECT_TRUE(cgroup_dirs("x").empty());
}

}  // namespace
}  // namespace carapace::testing
