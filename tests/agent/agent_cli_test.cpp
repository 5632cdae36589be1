// `carapace agent` end to end, and the client over a hybrid vsock socket.
#include "carapace/version.h"
#include "tests/agent/agent_test_util.h"
#include "tests/agent/fake_vsock_mux.h"
#include "tests/integration/process_runner.h"

namespace carapace::testing {
namespace {

class AgentCliTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(agent_.started()) << agent_.error(); }

  ProcessResult cli(std::vector<std::string> op) {
    std::vector<std::string> argv = {CARAPACE_BINARY,      "agent",   "--unix",
                                     agent_.socket_path(), "--token", kTestToken};
    argv.insert(argv.end(), op.begin(), op.end());
    return run_process(argv, std::chrono::seconds(30));
  }

  AgentProcess agent_;
};

TEST_F(AgentCliTest, PingPrintsTheAgentVersion) {
  auto r = cli({"ping"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("agent " CARAPACE_VERSION " protocol 1", 0), 0u) << r.out;
}

TEST_F(AgentCliTest, ExecPassesOutputAndExitStatusThrough) {
  auto r = cli({"exec", "--env", "X=42", "--", "sh", "-c", "echo $X; echo e >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "42\n");
  EXPECT_EQ(r.err, "e\n");
  auto t = cli({"exec", "--timeout-ms", "200", "--", "sleep", "30"});
  EXPECT_EQ(t.exit_code, 124) << t.err;
  auto k = cli({"exec", "--", "sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(k.exit_code, 128 + 15);
}

TEST_F(AgentCliTest, PutGetLsAndStat) {
  std::string local = agent_.dir() + "/local.txt", back = agent_.dir() + "/back.txt";
  write_text_file(local, "payload\n");
  EXPECT_EQ(cli({"put", local, "docs/report.txt", "--parents", "--mode", "600"}).exit_code, 0);
  EXPECT_EQ(read_text_file(agent_.root() + "/docs/report.txt"), "payload\n");
  EXPECT_EQ(cli({"get", "docs/report.txt", back}).exit_code, 0);
  EXPECT_EQ(read_text_file(back), "payload\n");
  auto out = cli({"get", "docs/report.txt", "-"});
  EXPECT_EQ(out.out, "payload\n");
  auto ls = cli({"ls", "docs"});
  EXPECT_EQ(ls.exit_code, 0);
  EXPECT_NE(ls.out.find("report.txt"), std::string::npos) << ls.out;
  EXPECT_NE(ls.out.find("0600"), std::string::npos) << ls.out;
  EXPECT_EQ(cli({"stat", "docs"}).exit_code, 0);
}

TEST_F(AgentCliTest, AgentErrorsAndBadUsageHaveDistinctStatuses) {
  auto refused = cli({"get", "../outside/secret", "-"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("path_refused"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.out, "");
  EXPECT_EQ(cli({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(cli({"get", "only-one-arg"}).exit_code, 2);
  auto no_socket = run_process({CARAPACE_BINARY, "agent", "ping"});
  EXPECT_EQ(no_socket.exit_code, 2);
  auto wrong_token = run_process(
      {CARAPACE_BINARY, "agent", "--unix", agent_.socket_path(), "--token", "00", "ls"});
  EXPECT_EQ(wrong_token.exit_code, 1);
  EXPECT_NE(wrong_token.err.find("unauthorized"), std::string::npos);
}

TEST_F(AgentCliTest, HybridVsockSocketIsReachedWithConnect) {
  std::string mux_path = agent_.dir() + "/vm.vsock";
  FakeVsockMux mux(mux_path, agent_.socket_path(), agent::kAgentVsockPort);
  ASSERT_TRUE(mux.listening());
  {
    auto c = AgentClient::connect_vsock_uds(mux_path);
    ASSERT_TRUE(c.ok()) << c.error().describe();
    c->set_token(kTestToken);
    auto r = run_exec(*c, {"echo", "via vsock"});
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(r->out, "via vsock\n");
  }
  auto wrong_port = AgentClient::connect_vsock_uds(mux_path, 53);
  EXPECT_FALSE(wrong_port.ok());
  auto r =
      run_process({CARAPACE_BINARY, "agent", "--uds", mux_path, "--token", kTestToken, "ping"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto bad = run_process({CARAPACE_BINARY, "agent", "--uds", mux_path, "--vsock-port", "1",
                          "--token", kTestToken, "ping"});
  EXPECT_EQ(bad.exit_code, 1);
}

}  // namespace
}  // namespace carapace::testing
