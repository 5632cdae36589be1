// Pause, capture and restore of a running VM, in process, over real KVM: the test guest's counter
// scenario is paused mid-computation, its state and RAM copied (RAM into a memfd), the parent
// resumed; clones restored from the copy (RAM mapped MAP_PRIVATE) must all finish with the value
// the parent computed, and their writes must not reach each other or the image.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "snapshot/memory_image.h"
#include "tests/integration/counter_support.h"
#include "vmm/machine/machine.h"

namespace carapace::testing {
namespace {

// RAM copied into a sealed memfd and mapped MAP_PRIVATE: the in-memory form of a snapshot.
GuestMemory map_private(const MemoryImage& image) {
  auto mem = map_guest_memory_private(image);
  EXPECT_TRUE(mem.ok()) << mem.error().describe();
  return std::move(mem).value();
}

TEST(MachineSnapshotKvm, ClonesOfAPausedCounterFinishWithTheParentsValue) {
  ASSERT_TRUE(kvm_usable());
  const std::string dir = ::testing::TempDir();
  auto parent = Machine::build(counter_config(dir + "parent.console"));
  ASSERT_TRUE(parent.ok()) << parent.error().describe();
  (*parent)->start();
  // Pause in the middle of the computation: once the guest has reported its third round.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (read_text_file(dir + "parent.console").find("round 3/30 ") == std::string::npos) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the counter never reached round 3";
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_TRUE((*parent)->pause().ok());
  auto state = (*parent)->capture_state();
  ASSERT_TRUE(state.ok()) << state.error().describe();
  auto ram = memory_image_in_memfd((*parent)->memory(), "carapace-test-ram");
  ASSERT_TRUE(ram.ok()) << ram.error().describe();
  (*parent)->resume();
  EXPECT_EQ((*parent)->wait(), VmOutcome::kGuestReset) << (*parent)->outcome_detail();
  const std::string parent_console = read_text_file(dir + "parent.console");
  const std::string expected = counter_final_value(parent_console);
  ASSERT_NE(expected, "") << parent_console;

  constexpr int kClones = 5;
  for (int i = 0; i < kClones; ++i) {
    const std::string console = dir + "clone" + std::to_string(i) + ".console";
    auto clone = Machine::restore(counter_config(console), *state, map_private(*ram));
    ASSERT_TRUE(clone.ok()) << clone.error().describe();
    EXPECT_EQ((*clone)->run(), VmOutcome::kGuestReset) << (*clone)->outcome_detail();
    const std::string out = read_text_file(console);
    EXPECT_EQ(counter_final_value(out), expected) << "clone " << i << ":\n" << out;
    EXPECT_NE(out.find("TESTGUEST PASS counter"), std::string::npos) << out;
    // A clone starts mid-run: it never prints the first rounds, but does print the last.
    EXPECT_EQ(out.find("round 1/30 "), std::string::npos) << out;
    EXPECT_NE(out.find("round 30/30 "), std::string::npos) << out;
  }
  // Every clone wrote all over the region; the memfd still holds the paused image.
  auto check = map_private(*ram);
  auto again = Machine::restore(counter_config(dir + "again.console"), *state, std::move(check));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->run(), VmOutcome::kGuestReset);
  EXPECT_EQ(counter_final_value(read_text_file(dir + "again.console")), expected);
}

}  // namespace
}  // namespace carapace::testing
