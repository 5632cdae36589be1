// The test guest's agent-ping scenario under `carapace run`, driven with `carapace agent` through
// the VMM's hybrid vsock socket: the same wire the real guest agent speaks
// (common/agent/PROTOCOL.md).
#include <gtest/gtest.h>

#include "tests/integration/process_runner.h"
#include "tests/integration/testguest_harness.h"

namespace carapace::testing {
namespace {

const char kToken[] = "00112233445566778899aabbccddeeff";
const char kNewToken[] = "ffeeddccbbaa99887766554433221100";

ProcessResult agent(const std::string& uds, std::vector<std::string> args,
                    const std::string& token = kToken) {
  std::vector<std::string> argv = {carapace_binary(), "agent", "--uds",           uds,
                                   "--token",         token,   "--io-timeout-ms", "20000"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, std::chrono::seconds(30));
}

TEST(AgentPingKvm, ServesPingPostRestoreAndShutdown) {
  ASSERT_TRUE(kvm_usable());
  const std::string uds = ::testing::TempDir() + "agent-ping.vsock";
  unlink(uds.c_str());
  RunningProcess vmm({carapace_binary(), "run", "--kernel", testguest_image(), "--cmdline",
                      std::string("testguest.run=agent-ping testguest.agent.token=") + kToken,
                      "--vsock", "cid=7,uds=" + uds, "--timeout", "60"});
  ASSERT_TRUE(vmm.wait_for_output("agent-ping ready", std::chrono::seconds(30)))
      << vmm.out() << vmm.err();
  auto ping = agent(uds, {"ping"});
  EXPECT_EQ(ping.exit_code, 0) << ping.out << ping.err;
  EXPECT_NE(ping.out.find("testguest"), std::string::npos) << ping.out;

  auto wrong = agent(uds, {"post-restore", "--clock"}, kNewToken);
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_NE(wrong.err.find("unauthorized"), std::string::npos) << wrong.err;

  auto restored =
      agent(uds, {"post-restore", "--clock", "--entropy", "32", "--new-token", kNewToken});
  EXPECT_EQ(restored.exit_code, 0) << restored.out << restored.err;
  EXPECT_NE(restored.out.find("token"), std::string::npos) << restored.out;

  // The old token no longer works; the new one does.
  EXPECT_NE(agent(uds, {"shutdown"}).exit_code, 0);
  auto down = agent(uds, {"shutdown"}, kNewToken);
  EXPECT_EQ(down.exit_code, 0) << down.out << down.err;
  auto r = vmm.finish(std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("TESTGUEST PASS agent-ping"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace carapace::testing
