// `carapace fork` over real KVM (§5): a counter guest running under
// `carapace run --api-sock` is forked mid-run into two children inside the same VMM process; the
// parent and both children finish with the same value, each on its own console, and the VMM
// exits once all three have ended. A VM with a writable drive cannot be forked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "tests/integration/counter_support.h"
#include "tests/integration/process_runner.h"

namespace carapace::testing {
namespace {

TEST(ForkCliKvm, ChildrenOfARunningCounterFinishWithTheParentsValue) {
  ASSERT_TRUE(kvm_usable());
  const std::string dir = ::testing::TempDir();
  const std::string console = dir + "fork-cli.console";
  const std::string sock = dir + "fork-cli.api";
  for (const std::string& f : {console, console + ".1", console + ".2", sock})
    unlink(f.c_str());
  RunningProcess vmm({carapace_binary(), "run", "--kernel", testguest_image(), "--cmdline",
                      "testguest.run=counter testguest.mib=32 testguest.rounds=30", "--mem", "128",
                      "--console", "file:" + console, "--api-sock", sock, "--timeout", "120"});
  ASSERT_TRUE(wait_for_console(console, "round 3/30 ")) << read_text_file(console);
  auto fork = run_process({carapace_binary(), "fork", "--api-sock", sock, "--clones", "2"});
  ASSERT_EQ(fork.exit_code, 0) << fork.out << fork.err;
  EXPECT_NE(fork.out.find("\"children\""), std::string::npos) << fork.out;
  EXPECT_NE(fork.out.find(console + ".2"), std::string::npos) << fork.out;
  auto r = vmm.finish(std::chrono::seconds(120));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string expected = counter_final_value(read_text_file(console));
  ASSERT_NE(expected, "") << read_text_file(console);
  for (const std::string& child : {console + ".1", console + ".2"}) {
    const std::string out = read_text_file(child);
    EXPECT_EQ(counter_final_value(out), expected) << child << ":\n" << out;
    EXPECT_EQ(out.find("round 1/30 "), std::string::npos) << "a child starts mid-run";
  }
}

TEST(ForkCliKvm, RefusedForAWritableDriveAndForBadCounts) {
  ASSERT_TRUE(kvm_usable());
  const std::string dir = ::testing::TempDir();
  const std::string disk = dir + "fork-cli.disk";
  const std::string console = dir + "fork-refused.console";
  const std::string sock = dir + "fork-refused.api";
  unlink(console.c_str());
  unlink(sock.c_str());
  {
    std::ofstream f(disk, std::ios::trunc);
    f << std::string(1 << 20, '\0');
  }
  RunningProcess vmm({carapace_binary(), "run", "--kernel", testguest_image(), "--cmdline",
                      "testguest.run=idle", "--console", "file:" + console, "--drive",
                      "path=" + disk, "--api-sock", sock, "--timeout", "60"});
  ASSERT_TRUE(wait_for_console(console, "idle ready")) << read_text_file(console);
  auto refused = run_process({carapace_binary(), "fork", "--api-sock", sock});
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("writable"), std::string::npos) << refused.err;
  auto bad = run_process({carapace_binary(), "fork", "--api-sock", sock, "--clones", "0"});
  EXPECT_EQ(bad.exit_code, 2);
  auto none = run_process({carapace_binary(), "fork"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("--api-sock"), std::string::npos);
  kill(vmm.pid(), SIGKILL);
  vmm.finish();
}

}  // namespace
}  // namespace carapace::testing
