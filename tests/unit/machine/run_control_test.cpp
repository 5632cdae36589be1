// RunControl: the end of a run reaches vCPU threads parked by a pause, whoever ends it.
#include "vmm/machine/run_control.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace carapace {
namespace {

using namespace std::chrono_literals;

// A parked vCPU thread that the end of the run must release; `end` ends it.
template <typename End>
bool parked_thread_ends(End end) {
  RunControl c;
  c.request_pause();
  std::atomic<bool> done{false};
  std::thread vcpu([&] {
    c.park();
    done = true;
  });
  EXPECT_TRUE(c.wait_paused(1));
  end(c);
  for (int i = 0; i < 200 && !done; ++i)
    std::this_thread::sleep_for(10ms);
  const bool ended = done;
  if (!ended) c.resume();  // let the test finish either way
  vcpu.join();
  return ended;
}

TEST(RunControlTest, FinishReleasesParkedVcpus) {
  EXPECT_TRUE(parked_thread_ends([](RunControl& c) {
    c.finish(VmOutcome::kHostError, "stopped");
    EXPECT_EQ(c.wait(std::nullopt), VmOutcome::kHostError);
  }));
}

// --timeout on a paused VM (a pooled VM, or one left paused by a snapshot): the VMM must end.
TEST(RunControlTest, ATimeoutReleasesParkedVcpus) {
  EXPECT_TRUE(parked_thread_ends([](RunControl& c) {
    EXPECT_EQ(c.wait(std::chrono::nanoseconds(10ms)), VmOutcome::kTimeout);
    EXPECT_EQ(c.detail(), "timeout expired");
  }));
}

}  // namespace
}  // namespace carapace
