// examples/embed: a program of its own that runs carapace microVMs in process through the
// installed library (find_package(carapace) or pkg-config). It boots the test guest's counter
// scenario, pauses it mid-run, snapshots it to a directory, lets it finish, then restores the
// snapshot into a second VM and checks that both end with the same value.
//
// usage: embed_boot TESTGUEST_IMAGE WORK_DIR
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "vmm/embed/carapace.h"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The counter scenario prints "counter final 0x..." as its last word.
std::string final_value(const std::string& console) {
  auto at = console.find("counter final ");
  if (at == std::string::npos) return "";
  return console.substr(at + 14, console.find_first_of(" \r\n", at + 14) - (at + 14));
}

carapace::MachineConfig counter_vm(const std::string& kernel, const std::string& console) {
  carapace::MachineConfig c;
  c.kernel_path = kernel;
  c.cmdline = "testguest.run=counter testguest.mib=32 testguest.rounds=30";
  c.mem_bytes = 128ull << 20;
  c.console.kind = carapace::ConsoleKind::kFile;
  c.console.path = console;
  c.timeout_seconds = 120;
  return c;
}

int fail(const char* what, const carapace::Error& e) {
  fprintf(stderr, "embed: %s: %s\n", what, e.describe().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace carapace;
  if (argc != 3) {
    fprintf(stderr, "usage: %s TESTGUEST_IMAGE WORK_DIR\n", argv[0]);
    return 2;
  }
  const std::string kernel = argv[1], dir = argv[2];
  printf("embed: carapace %s\n", kVersion);

  auto vm = Machine::build(counter_vm(kernel, dir + "/first.console"));
  if (!vm.ok()) return fail("build", vm.error());
  (*vm)->start();

  // Snapshot in the middle of the computation, once the guest has reported its third round.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (read_file(dir + "/first.console").find("round 3/30 ") == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) {
      fprintf(stderr, "embed: the guest never reached round 3\n");
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (Status s = (*vm)->pause(); !s.ok()) return fail("pause", s.error());
  // A VM paused by its caller stays paused through the snapshot; it goes on at resume().
  auto written = snapshot_machine(**vm, dir + "/snap");
  if (!written.ok()) return fail("snapshot", written.error());
  (*vm)->resume();
  VmOutcome first = (*vm)->wait();
  const std::string expected = final_value(read_file(dir + "/first.console"));
  printf("embed: first VM: %s, counter %s\n", outcome_name(first), expected.c_str());

  auto restored =
      restore_machine_from_snapshot(dir + "/snap", counter_vm(kernel, dir + "/second.console"));
  if (!restored.ok()) return fail("restore", restored.error());
  VmOutcome second = (*restored)->run();
  const std::string got = final_value(read_file(dir + "/second.console"));
  printf("embed: restored VM: %s, counter %s\n", outcome_name(second), got.c_str());

  if (first != VmOutcome::kGuestReset || second != VmOutcome::kGuestReset || expected.empty() ||
      got != expected) {
    fprintf(stderr, "embed: FAIL: the restored VM must end like the first one\n");
    return 1;
  }
  printf("embed: PASS\n");
  return 0;
}
