// Pause, capture and restore of a running VM, in process, over real KVM: the test guest's counter
// scenario is paused mid-computation, its state and RAM copied (RAM into a memfd), the parent
// resumed; clones restored from the copy (RAM mapped MAP_PRIVATE) must all finish with the value
// the parent computed, and their writes must not reach each other or the image.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/integration/testguest_harness.h"
#include "vmm/base/unique_fd.h"
#include "vmm/machine/machine.h"

namespace carapace::testing {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string final_value(const std::string& console) {
  std::smatch m;
  static const std::regex re("counter final (0x[0-9a-f]+)");
  return std::regex_search(console, m, re) ? m[1].str() : "";
}

MachineConfig counter_config(const std::string& console_path) {
  MachineConfig c;
  c.kernel_path = testguest_image();
  c.cmdline = "testguest.run=counter testguest.mib=32 testguest.rounds=30";
  c.mem_bytes = 128ull << 20;
  c.console.kind = ConsoleKind::kFile;
  c.console.path = console_path;
  c.timeout_seconds = 60;
  return c;
}

// Guest RAM copied into a memfd: the in-memory form of a snapshot's memory file.
UniqueFd copy_ram(const GuestMemory& mem) {
  UniqueFd fd(memfd_create("carapace-test-ram", MFD_CLOEXEC));
  uint64_t offset = 0;
  for (const auto& r : mem.regions()) {
    EXPECT_EQ(pwrite(fd.get(), r.host_base(), r.size, offset), static_cast<ssize_t>(r.size));
    offset += r.size;
  }
  return fd;
}

GuestMemory map_private(int fd, const std::vector<RegionSpec>& layout) {
  std::vector<GuestRegion> regions;
  uint64_t offset = 0;
  for (const auto& spec : layout) {
    auto map = MmapRegion::from_fd(fd, spec.size, PROT_READ | PROT_WRITE, MAP_PRIVATE, offset);
    EXPECT_TRUE(map.ok());
    regions.push_back(GuestRegion{spec.start, spec.size, std::move(map).value()});
    offset += spec.size;
  }
  return std::move(GuestMemory::from_regions(std::move(regions))).value();
}

TEST(MachineSnapshotKvm, ClonesOfAPausedCounterFinishWithTheParentsValue) {
  ASSERT_TRUE(kvm_usable());
  const std::string dir = ::testing::TempDir();
  auto parent = Machine::build(counter_config(dir + "parent.console"));
  ASSERT_TRUE(parent.ok()) << parent.error().describe();
  (*parent)->start();
  // Pause in the middle of the computation: once the guest has reported its third round.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (read_file(dir + "parent.console").find("round 3/30 ") == std::string::npos) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the counter never reached round 3";
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_TRUE((*parent)->pause().ok());
  auto state = (*parent)->capture_state();
  ASSERT_TRUE(state.ok()) << state.error().describe();
  UniqueFd ram = copy_ram((*parent)->memory());
  (*parent)->resume();
  EXPECT_EQ((*parent)->wait(), VmOutcome::kGuestReset) << (*parent)->outcome_detail();
  const std::string parent_console = read_file(dir + "parent.console");
  const std::string expected = final_value(parent_console);
  ASSERT_NE(expected, "") << parent_console;

  constexpr int kClones = 5;
  for (int i = 0; i < kClones; ++i) {
    const std::string console = dir + "clone" + std::to_string(i) + ".console";
    auto clone =
        Machine::restore(counter_config(console), *state, map_private(ram.get(), state->ram));
    ASSERT_TRUE(clone.ok()) << clone.error().describe();
    EXPECT_EQ((*clone)->run(), VmOutcome::kGuestReset) << (*clone)->outcome_detail();
    const std::string out = read_file(console);
    EXPECT_EQ(final_value(out), expected) << "clone " << i << ":\n" << out;
    EXPECT_NE(out.find("TESTGUEST PASS counter"), std::string::npos) << out;
    // A clone starts mid-run: it never prints the first rounds, but does print the last.
    EXPECT_EQ(out.find("round 1/30 "), std::string::npos) << out;
    EXPECT_NE(out.find("round 30/30 "), std::string::npos) << out;
  }
  // Every clone wrote all over the region; the memfd still holds the paused image.
  auto check = map_private(ram.get(), state->ram);
  auto again = Machine::restore(counter_config(dir + "again.console"), *state, std::move(check));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->run(), VmOutcome::kGuestReset);
  EXPECT_EQ(final_value(read_file(dir + "again.console")), expected);
}

}  // namespace
}  // namespace carapace::testing
