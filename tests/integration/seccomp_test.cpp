// Per-thread seccomp filters of `carapace run` (docs/security.md #32): every thread of a
// running VMM is filtered, and each thread role's filter kills the process on a syscall it does not
// list (the CARAPACE_SECCOMP_PROBE hook makes the first thread of a role try one).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <fstream>
#include <sstream>

#include "tests/integration/process_runner.h"
#include "tests/integration/testguest_harness.h"
#include "tests/integration/text_file.h"

namespace carapace::testing {
namespace {

// A VM with every kind of thread: vCPUs, the event loop (rng device), the console writer (file),
// a virtio-fs thread (docs/security.md #60).
std::vector<std::string> idle_vm(const std::string& console, std::vector<std::string> extra = {}) {
  unlink(console.c_str());  // a stale file from an earlier run would read as ready at once
  const std::string share = ::testing::TempDir() + "seccomp-share";
  mkdir(share.c_str(), 0700);
  std::vector<std::string> argv = {carapace_binary(),
                                   "run",
                                   "--kernel",
                                   testguest_image(),
                                   "--cmdline",
                                   "testguest.run=idle",
                                   "--vcpus",
                                   "2",
                                   "--rng",
                                   "--fs",
                                   "tag=share,path=" + share,
                                   "--console",
                                   "file:" + console,
                                   "--timeout",
                                   "60"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

bool wait_for_file_text(const std::string& path, const std::string& text) {
  for (int i = 0; i < 10000; ++i) {
    if (read_text_file(path).find(text) != std::string::npos) return true;
    usleep(1000);
  }
  return false;
}

// "Seccomp:" of every task of `pid`: name -> mode.
std::vector<std::pair<std::string, int>> seccomp_modes(int pid) {
  std::vector<std::pair<std::string, int>> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::istringstream status(read_text_file(dir + "/" + e->d_name + "/status"));
    std::string line, name;
    int mode = -1;
    while (std::getline(status, line)) {
      if (line.rfind("Name:", 0) == 0) name = line.substr(6);
      if (line.rfind("Seccomp:", 0) == 0) mode = std::stoi(line.substr(8));
    }
    out.emplace_back(std::string(e->d_name) + " " + name, mode);
  }
  closedir(d);
  return out;
}

TEST(SeccompKvm, EveryThreadOfARunningVmmIsFiltered) {
  ASSERT_TRUE(kvm_usable());
  const std::string console = ::testing::TempDir() + "seccomp-idle.console";
  RunningProcess vmm(idle_vm(console));
  ASSERT_TRUE(vmm.started());
  ASSERT_TRUE(wait_for_file_text(console, "idle ready")) << read_text_file(console) << vmm.err();
  auto modes = seccomp_modes(vmm.pid());
  // main, event loop, console writer, virtio-fs, two vCPUs.
  EXPECT_GE(modes.size(), 6u);
  for (const auto& [task, mode] : modes)
    EXPECT_EQ(mode, 2) << "task " << task << " is not under a seccomp filter";
  kill(vmm.pid(), SIGKILL);
  vmm.finish();
}

TEST(SeccompKvm, NoSeccompIsRefusedUnlessAllowed) {
  ASSERT_TRUE(kvm_usable());
  unsetenv("CARAPACE_ALLOW_NO_SECCOMP");
  const std::string console = ::testing::TempDir() + "seccomp-off.console";
  auto refused = run_process(idle_vm(console, {"--no-seccomp"}));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("CARAPACE_ALLOW_NO_SECCOMP=1"), std::string::npos) << refused.err;

  setenv("CARAPACE_ALLOW_NO_SECCOMP", "1", 1);
  RunningProcess vmm(idle_vm(console, {"--no-seccomp"}));
  unsetenv("CARAPACE_ALLOW_NO_SECCOMP");
  ASSERT_TRUE(wait_for_file_text(console, "idle ready")) << vmm.err();
  for (const auto& [task, mode] : seccomp_modes(vmm.pid()))
    EXPECT_EQ(mode, 0) << "task " << task;
  kill(vmm.pid(), SIGKILL);
  vmm.finish();
}

// Each role's filter, tried by that role's first thread: the process dies by SIGSYS and says why.
class SeccompProbeKvm : public ::testing::TestWithParam<const char*> {};

TEST_P(SeccompProbeKvm, ForbiddenSyscallKillsWithSigsys) {
  ASSERT_TRUE(kvm_usable());
  setenv("CARAPACE_SECCOMP_PROBE", GetParam(), 1);
  const std::string console = ::testing::TempDir() + "seccomp-probe.console";
  auto r = run_process(idle_vm(console), std::chrono::seconds(30));
  unsetenv("CARAPACE_SECCOMP_PROBE");
  EXPECT_EQ(r.term_signal, SIGSYS) << "exit " << r.exit_code << "\n" << r.err;
  EXPECT_NE(r.err.find("carapace: seccomp: forbidden system call"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(" + std::string(GetParam()) + " filter)"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Roles, SeccompProbeKvm,
                         ::testing::Values("main", "event-loop", "vcpu", "console", "fs"),
                         [](const auto& info) {
                           std::string n = info.param;
                           return n == "event-loop" ? std::string("event_loop") : n;
                         });

}  // namespace
}  // namespace carapace::testing
