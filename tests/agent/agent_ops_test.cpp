// Every operation of the agent protocol against a real agent process (host build, Unix socket).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "carapace/version.h"
#include "tests/agent/agent_test_util.h"

namespace carapace::testing {
namespace {

class AgentOpsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(agent_.started()) << agent_.error(); }
  AgentProcess agent_;
};

TEST_F(AgentOpsTest, PingReportsVersionAndNeedsNoToken) {
  auto c = AgentClient::connect_unix(agent_.socket_path());
  ASSERT_TRUE(c.ok()) << c.error().describe();
  auto p = c->ping();  // no token set on this client
  ASSERT_TRUE(p.ok()) << p.error().describe();
  EXPECT_EQ(p->version, CARAPACE_VERSION);
  EXPECT_EQ(p->protocol, 1);
  EXPECT_TRUE(p->token_set);
  EXPECT_EQ(code_of(c->stat(".")), "unauthorized");
}

TEST_F(AgentOpsTest, ExecStreamsOutputAndReportsExitCode) {
  AgentClient c = agent_.connect();
  auto r = run_exec(c, {"sh", "-c", "echo out; echo err >&2; exit 7"});
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_TRUE(r->result.exited);
  EXPECT_EQ(r->result.exit_code, 7);
  EXPECT_FALSE(r->result.timed_out);
  EXPECT_FALSE(r->result.truncated);
  EXPECT_EQ(r->result.stdout_bytes, 4u);
}

TEST_F(AgentOpsTest, ExecReportsTheKillingSignal) {
  AgentClient c = agent_.connect();
  auto r = run_exec(c, {"sh", "-c", "kill -9 $$"});
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_FALSE(r->result.exited);
  EXPECT_EQ(r->result.signal, SIGKILL);
}

TEST_F(AgentOpsTest, ExecAppliesEnvCwdAndStdin) {
  ::mkdir((agent_.root() + "/sub").c_str(), 0755);
  AgentClient c = agent_.connect();
  AgentExecOptions o;
  o.env = {{"FOO", "bar baz"}};
  o.cwd = "sub";
  o.stdin_data = std::string("line1\nline2\n") + std::string(200000, 'x');
  auto r = run_exec(c, {"sh", "-c", "echo \"$FOO\"; pwd; echo \"$PATH\"; wc -c"}, o);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  std::string expect = "bar baz\n" + agent_.root() + "/sub\n";
  EXPECT_EQ(r->out.substr(0, expect.size()), expect);
  EXPECT_NE(r->out.find("/usr/bin"), std::string::npos);
  EXPECT_NE(r->out.find("200012"), std::string::npos) << r->out;
}

TEST_F(AgentOpsTest, ExecOfAMissingProgramFailsAndTheConnectionGoesOn) {
  AgentClient c = agent_.connect();
  auto r = run_exec(c, {"no-such-program-carapace"});
  EXPECT_EQ(code_of(r), "exec_failed");
  EXPECT_TRUE(c.ping().ok());
}

TEST_F(AgentOpsTest, ExecOutputBeyondMaxOutputIsDroppedAndFlagged) {
  AgentClient c = agent_.connect();
  AgentExecOptions o;
  o.max_output = 1000;
  auto r = run_exec(c, {"sh", "-c", "head -c 300000 /dev/zero; echo tail >&2"}, o);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->out.size(), 1000u);
  EXPECT_EQ(r->err, "tail\n");
  EXPECT_TRUE(r->result.truncated);
  EXPECT_EQ(r->result.stdout_bytes, 300000u);  // the process ran to completion
  EXPECT_EQ(r->result.exit_code, 0);
}

TEST_F(AgentOpsTest, ExecStreamsLargeOutputInFull) {
  AgentClient c = agent_.connect();
  auto r = run_exec(c, {"seq", "1", "300000"});
  ASSERT_TRUE(r.ok()) << r.error().describe();
  std::string expect;
  for (int i = 1; i <= 300000; ++i)
    expect += std::to_string(i) + "\n";
  EXPECT_EQ(r->out, expect);
}

// No process of a timed-out exec survives: the whole process group gets SIGKILL.
TEST_F(AgentOpsTest, ExecTimeoutKillsTheWholeProcessGroup) {
  AgentClient c = agent_.connect();
  AgentExecOptions o;
  o.timeout_ms = 300;
  auto start = std::chrono::steady_clock::now();
  auto r = run_exec(c, {"sh", "-c", "echo $$; sleep 100 & echo $!; sleep 100"}, o);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_TRUE(r->result.timed_out);
  EXPECT_EQ(r->result.signal, SIGKILL);
  pid_t sh = 0, bg = 0;
  ASSERT_EQ(sscanf(r->out.c_str(), "%d\n%d", &sh, &bg), 2) << r->out;
  // Gone, and reaped by the agent (a zombie would still answer kill(pid, 0)).
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((::kill(sh, 0) == 0 || ::kill(bg, 0) == 0 || ::kill(-sh, 0) == 0) &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_NE(::kill(sh, 0), 0);
  EXPECT_NE(::kill(bg, 0), 0);
  EXPECT_NE(::kill(-sh, 0), 0) << "a process of the group survived";
}

TEST_F(AgentOpsTest, ExecEndsWhenItsProcessExitsEvenIfABackgroundChildHoldsTheOutput) {
  AgentClient c = agent_.connect();
  auto start = std::chrono::steady_clock::now();
  auto r = run_exec(c, {"sh", "-c", "sleep 3 & echo started"});
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->out, "started\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
}

TEST_F(AgentOpsTest, KillSignalsARunningExecByIdAndDuplicateIdsAreRefused) {
  constexpr uint64_t kId = 424242;
  std::atomic<bool> started{false};
  std::thread runner([&] {
    AgentClient c = agent_.connect();
    AgentExecOptions o;
    o.id = kId;
    o.timeout_ms = 30'000;  // bounds the test if the kill never comes
    auto r = c.exec(
        {"sh", "-c", "echo started; exec sleep 100"}, o, [&](std::string_view) { started = true; },
        nullptr);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(r->signal, SIGTERM);
    EXPECT_FALSE(r->timed_out);
  });
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!started && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(started);
  AgentClient k = agent_.connect();
  AgentExecOptions dup;
  dup.id = kId;
  EXPECT_EQ(code_of(run_exec(k, {"touch", "dup-ran"}, dup)), "id_in_use");
  EXPECT_FALSE(exists(agent_.root() + "/dup-ran"));
  Status s = k.kill(kId, SIGTERM);
  EXPECT_TRUE(s.ok()) << s.error().describe();
  runner.join();
  EXPECT_EQ(agent_error_code(k.kill(kId, SIGTERM).error()), "not_found");
}

TEST_F(AgentOpsTest, PutAndGetRoundTripBinaryDataInSeveralChunks) {
  std::string data;
  for (int i = 0; i < 5000; ++i)
    for (int b = 0; b < 256; ++b)
      data.push_back(static_cast<char>(b));
  AgentClient c = agent_.connect();
  Status s = c.put_file("blob.bin", data, 0600);
  ASSERT_TRUE(s.ok()) << s.error().describe();
  EXPECT_EQ(read_text_file(agent_.root() + "/blob.bin"), data);
  auto got = c.get_file("blob.bin");
  ASSERT_TRUE(got.ok()) << got.error().describe();
  EXPECT_EQ(*got, data);
  auto st = c.stat("blob.bin");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->type, "file");
  EXPECT_EQ(st->mode, 0600u);
  EXPECT_EQ(st->size, data.size());
  EXPECT_EQ(dir_names(agent_.root()), std::vector<std::string>{"blob.bin"});  // no temp left
}

TEST_F(AgentOpsTest, PutCreatesParentDirectoriesOnlyWhenAsked) {
  AgentClient c = agent_.connect();
  EXPECT_EQ(agent_error_code(c.put_file("a/b/c.txt", "x").error()), "not_found");
  ASSERT_TRUE(c.put_file("a/b/c.txt", "x", 0644, true).ok());
  EXPECT_EQ(read_text_file(agent_.root() + "/a/b/c.txt"), "x");
  ASSERT_TRUE(c.put_file("empty", "").ok());
  EXPECT_EQ(read_text_file(agent_.root() + "/empty"), "");
}

TEST_F(AgentOpsTest, PutReplacesAFileAndRefusesADirectoryLeavingNoTemporaryFile) {
  AgentClient c = agent_.connect();
  ASSERT_TRUE(c.put_file("f", "one").ok());
  ASSERT_TRUE(c.put_file("f", "two").ok());
  EXPECT_EQ(read_text_file(agent_.root() + "/f"), "two");
  ::mkdir((agent_.root() + "/d").c_str(), 0755);
  ::mkdir((agent_.root() + "/d/inner").c_str(), 0755);
  EXPECT_EQ(agent_error_code(c.put_file("d", "x").error()), "is_directory");
  EXPECT_EQ(dir_names(agent_.root()), (std::vector<std::string>{"d", "f"}));
}

TEST_F(AgentOpsTest, AnAbandonedUploadLeavesNothing) {
  {
    AgentClient c = agent_.connect();
    ASSERT_TRUE(
        c.send_request({{"op", "put_file"}, {"path", "partial"}, {"data", "YWJj"}, {"more", true}})
            .ok());
    ASSERT_TRUE(c.read_frame_text().ok());
    EXPECT_EQ(dir_names(agent_.root()).size(), 1u);  // the temporary file
  }                                                  // closed before the last chunk
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!dir_names(agent_.root()).empty() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(dir_names(agent_.root()).empty());
}

TEST_F(AgentOpsTest, ListAndStatDescribeEntriesWithoutFollowingSymlinks) {
  write_text_file(agent_.root() + "/file", "12345");
  ::mkdir((agent_.root() + "/dir").c_str(), 0700);
  ::symlink("file", (agent_.root() + "/link").c_str());
  ::mkfifo((agent_.root() + "/fifo").c_str(), 0644);
  AgentClient c = agent_.connect();
  auto l = c.list(".");
  ASSERT_TRUE(l.ok()) << l.error().describe();
  ASSERT_EQ(l->size(), 4u);
  EXPECT_EQ((*l)[0].name, "dir");
  EXPECT_EQ((*l)[0].type, "dir");
  EXPECT_EQ((*l)[0].mode, 0700u);
  EXPECT_EQ((*l)[1].type, "fifo");
  EXPECT_EQ((*l)[2].name, "file");
  EXPECT_EQ((*l)[2].size, 5u);
  EXPECT_EQ((*l)[3].type, "symlink");
  auto st = c.stat("link");
  ASSERT_TRUE(st.ok()) << st.error().describe();
  EXPECT_EQ(st->type, "symlink");
  EXPECT_EQ(code_of(c.stat("missing")), "not_found");
  EXPECT_EQ(code_of(c.list("file")), "not_directory");
}

TEST_F(AgentOpsTest, PostRestoreReplacesTheTokenAndSkipsMachineChangesOnTheHost) {
  AgentClient c = agent_.connect();
  AgentClient old = agent_.connect();
  AgentPostRestore pr;
  pr.clock = timespec{1'800'000'000, 5};
  pr.entropy = std::string(64, '\x5a');
  pr.hostname = "clone-7";
  pr.new_token = "abcdef0123456789abcdef0123456789";
  auto applied = c.post_restore(pr);
  ASSERT_TRUE(applied.ok()) << applied.error().describe();
  EXPECT_EQ(*applied, std::vector<std::string>{"token"});
  EXPECT_TRUE(c.stat(".").ok());  // the client switched to the new token
  EXPECT_EQ(code_of(old.stat(".")), "unauthorized");
}

TEST_F(AgentOpsTest, PostRestoreChecksItsFields) {
  AgentClient c = agent_.connect();
  AgentPostRestore pr;
  pr.entropy = std::string(5000, 'e');
  EXPECT_EQ(code_of(c.post_restore(pr)), "too_large");
  pr.entropy.clear();
  pr.hostname = "bad host";
  EXPECT_EQ(code_of(c.post_restore(pr)), "bad_request");
}

TEST_F(AgentOpsTest, ShutdownEndsTheAgent) {
  AgentClient c = agent_.connect();
  ASSERT_TRUE(c.shutdown().ok());
  int status = -1;
  ASSERT_TRUE(agent_.wait_exit(5000, &status));
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(AgentLimitsTest, OversizedPutAndGetAreRefused) {
  AgentProcess agent({"--max-file-bytes", "65536"});
  ASSERT_TRUE(agent.started()) << agent.error();
  AgentClient c = agent.connect();
  EXPECT_TRUE(c.put_file("fits", std::string(65536, 'a')).ok());
  EXPECT_EQ(agent_error_code(c.put_file("big", std::string(65537, 'a')).error()), "too_large");
  // Declared size and actual bytes are both checked: chunks past the limit are refused too.
  ASSERT_TRUE(c.send_request({{"op", "put_file"},
                              {"path", "sneaky"},
                              {"size", 10},
                              {"data", "YWJj"},
                              {"more", true},
                              {"id", 99}})
                  .ok());
  ASSERT_TRUE(c.read_frame_text().ok());
  std::string chunk(65536, 'b');
  ASSERT_TRUE(
      c.send_request({{"op", "put_file"}, {"id", 99}, {"data", agent::base64_encode(chunk)}}).ok());
  auto reply = c.read_frame_text();
  ASSERT_TRUE(reply.ok());
  EXPECT_NE(reply->find("too_large"), std::string::npos) << *reply;
  EXPECT_EQ(dir_names(agent.root()), std::vector<std::string>{"fits"});
  write_text_file(agent.root() + "/huge", std::string(65537, 'h'));
  EXPECT_EQ(code_of(c.get_file("huge")), "too_large");
  EXPECT_TRUE(c.ping().ok());
}

}  // namespace
}  // namespace carapace::testing
