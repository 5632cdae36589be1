// virtio-rng through the test guest's driver, over KVM with the real `carapace` binary.
#include <gtest/gtest.h>

#include "tests/integration/virtio_test_support.h"

namespace carapace::testing {
namespace {

TEST(VirtioRngKvm, GuestReadsEntropy) {
  ASSERT_TRUE(kvm_usable());
  auto r = run_virtio("rng", "", {"--rng"});
  EXPECT_TRUE(passed(r, "rng"));
  EXPECT_NE(r.out.find("testguest: rng 5120 bytes in 5 requests"), std::string::npos)
      << describe(r);
  EXPECT_EQ(r.err, "") << describe(r);
}

// Two runs must not see the same bytes (fresh host entropy, not a fixed seed).
TEST(VirtioRngKvm, EntropyDiffersBetweenRuns) {
  ASSERT_TRUE(kvm_usable());
  auto first_word = [](const std::string& out) {
    auto pos = out.find("first word ");
    return pos == std::string::npos ? std::string() : out.substr(pos, 30);
  };
  auto a = run_virtio("rng", "", {"--rng"});
  auto b = run_virtio("rng", "", {"--rng"});
  ASSERT_TRUE(passed(a, "rng"));
  ASSERT_TRUE(passed(b, "rng"));
  EXPECT_NE(first_word(a.out), first_word(b.out));
}

// A guest that reboots without resetting its devices (Linux does): the VMM must still tear the
// active device down and exit, promptly.
TEST(VirtioRngKvm, ExitsWithDeviceStillActive) {
  ASSERT_TRUE(kvm_usable());
  auto r = run_virtio("rng", "testguest.keep-devices", {"--rng"}, std::chrono::seconds(20));
  EXPECT_FALSE(r.timed_out) << describe(r);
  EXPECT_TRUE(passed(r, "rng"));
}

TEST(VirtioRngKvm, MissingDeviceFailsInGuest) {
  ASSERT_TRUE(kvm_usable());
  auto r = run_virtio("rng", "", {});
  EXPECT_TRUE(has_line(r.out, "TESTGUEST FAIL rng: no virtio-rng device (run with --rng)"))
      << describe(r);
  EXPECT_EQ(r.exit_code, 0) << describe(r);
}

}  // namespace
}  // namespace carapace::testing
