// Shared by the microvm back end's KVM tests (microvm_backend_test.cpp, microvm_jail_test.cpp):
// a fixture with a fresh template folder under /tmp, the test guest's agent-ping template, and
// /proc helpers to find the VMM processes.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/backends/backend.h"
#include "tests/integration/proc_status.h"
#include "tests/integration/text_file.h"

namespace carapace::service {

inline bool exists(const std::string& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0;
}

inline bool pid_alive(int pid) {
  // Our children are reaped by the back end: a zombie would still answer kill(0).
  return pid > 0 && ::kill(pid, 0) == 0;
}

using carapace::testing::read_text_file;

// Entries of `dir` (not recursive), sorted. An empty "jails" folder (where a jailed template's
// jails live; the jail supervisor leaves the folder itself) is not listed: a non-empty one is.
inline std::set<std::string> entries(const std::string& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    out.insert(e.path().filename().string());
  if (out.count("jails") && std::filesystem::is_empty(dir + "/jails", ec)) out.erase("jails");
  return out;
}

// A process's command line, split at its NULs.
inline std::vector<std::string> cmdline_of(const std::string& pid) {
  const std::string raw = read_text_file("/proc/" + pid + "/cmdline");
  std::vector<std::string> args;
  size_t start = 0;
  while (start < raw.size()) {
    size_t end = raw.find('\0', start);
    if (end == std::string::npos) end = raw.size();
    args.push_back(raw.substr(start, end - start));
    start = end + 1;
  }
  return args;
}

// The pid of a `carapace restore` VMM of this template's snapshot (a pooled VM; inside its jail
// when jailed, not the supervisor), or -1.
inline int pooled_vmm_pid(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto args = cmdline_of(name);
    if (args.size() < 4 || args[1] != "restore") continue;
    for (size_t i = 2; i + 1 < args.size(); ++i)
      if (args[i] == "--snapshot" && args[i + 1] == dir + "/snapshot") return std::stoi(name);
  }
  return -1;
}

// utime + stime of a process, in clock ticks.
inline uint64_t cpu_ticks(int pid) {
  const std::string stat = read_text_file("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');  // the command name may hold spaces
  unsigned long long utime = 0, stime = 0;
  if (close == std::string::npos ||
      sscanf(stat.c_str() + close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
             &utime, &stime) != 2)
    return 0;
  return utime + stime;
}

// The cgroup directories named carapace/<id> on this host (v1 hierarchies and the unified tree).
inline std::vector<std::string> jail_cgroup_dirs(const std::string& id) {
  std::vector<std::string> out;
  for (const char* h : {"memory", "cpu", "cpuacct", "pids", "blkio", "unified", ""}) {
    std::string dir = std::string("/sys/fs/cgroup/") + h + (*h ? "/" : "") + "carapace/" + id;
    if (exists(dir)) out.push_back(dir);
  }
  return out;
}

// What a jail supervisor killed by SIGKILL leaves in the cgroup trees: empty carapace/<id>
// directories in the pids hierarchy and the unified tree (those present here).
inline std::vector<std::string> make_stale_cgroups(const std::string& id) {
  std::vector<std::string> made;
  for (const char* root : {"/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified"}) {
    if (!exists(std::string(root) + "/cgroup.procs")) continue;
    const std::string parent = std::string(root) + "/carapace";
    ::mkdir(parent.c_str(), 0755);
    const std::string dir = parent + "/" + id;
    if (::mkdir(dir.c_str(), 0755) == 0) made.push_back(dir);
  }
  return made;
}

class MicrovmFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(exists("/dev/kvm")) << "these tests need /dev/kvm";
    ASSERT_TRUE(exists(CARAPACE_TESTGUEST)) << "build the testguest target first";
    if (jailed_) {
      ASSERT_EQ(::geteuid(), 0u) << "jailed VMMs need root";
    }
    char tmpl[] = "/tmp/mvb.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  TemplateSpec spec(uint32_t pool, const std::string& scenario = "agent-ping") {
    TemplateSpec s;
    s.kernel = CARAPACE_TESTGUEST;
    s.boot_args = "testguest.run=" + scenario;
    s.mem_mib = 64;
    s.pool_size = pool;
    s.agent_timeout_s = 20;
    return s;
  }
  BackendContext ctx() {
    BackendContext c;
    c.template_id = "tpl-test";
    c.dir = dir_;
    c.carapace_exe = CARAPACE_BINARY;
    c.jail = jailed_;
    return c;
  }
  // Waits until the pool holds `n` ready VMs.
  bool wait_ready(TemplateBackend& t, uint32_t n,
                  std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      if (t.pool_stats().ready >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  std::string dir_;
  bool jailed_ = false;
};

// The back end's tests, run with VMMs plain and jailed (the parameter).
class MicrovmBackendTest : public MicrovmFixture, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    jailed_ = GetParam();
    MicrovmFixture::SetUp();
  }
};

// `carapace run` on its own (no back end).
class MicrovmVmmTest : public MicrovmFixture {};

// Pings the instance's agent with its own token and checks the answer.
inline void expect_agent_answers(Instance& inst) {
  auto c = inst.agent().connect();
  ASSERT_TRUE(c.ok()) << c.error().describe();
  c->set_io_timeout_ms(5000);
  auto p = c->ping();
  ASSERT_TRUE(p.ok()) << p.error().describe();
  EXPECT_TRUE(p->token_set);
}

}  // namespace carapace::service
