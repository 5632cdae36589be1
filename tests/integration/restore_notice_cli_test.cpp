// `carapace restore --agent-token` over real KVM (docs/security.md #25): the test guest's
// agent-ping scenario is snapshotted through the control API while it waits on vsock port 52;
// three clones restored from it each get their own CID and socket, a restore notice with their
// own new token (written to the token files), and then answer only that token.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "common/http/http_client.h"
#include "tests/integration/counter_support.h"
#include "tests/integration/process_runner.h"

namespace carapace::testing {
namespace {

const char kToken[] = "0123456789abcdef0123456789abcdef";

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r'))
    s.pop_back();
  return s;
}

TEST(RestoreNoticeCliKvm, ClonesGetTheirOwnTokensThroughTheNotice) {
  ASSERT_TRUE(kvm_usable());
  char tmpl[] = "/tmp/carapace-notice-cli-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string console = dir + "/parent.console";
  const std::string api = dir + "/parent.api";
  RunningProcess parent({carapace_binary(), "run", "--kernel", testguest_image(), "--cmdline",
                         std::string("testguest.run=agent-ping testguest.agent.token=") + kToken,
                         "--console", "file:" + console, "--vsock",
                         "cid=3,uds=" + dir + "/parent.vsock", "--api-sock", api, "--timeout",
                         "60"});
  ASSERT_TRUE(wait_for_console(console, "agent-ping ready")) << read_text_file(console);
  auto snap = http::http_request(api, "PUT", "/snapshot/create",
                                 R"({"dir": ")" + dir + R"(/snap", "resume": false})");
  ASSERT_TRUE(snap.ok()) << snap.error().describe();
  ASSERT_EQ(snap->status, 200) << snap->body;
  kill(parent.pid(), SIGKILL);
  parent.finish();

  const std::string uds = dir + "/clone.vsock";
  RunningProcess restore({carapace_binary(), "restore", "--snapshot", dir + "/snap", "--clones",
                          "3", "--console", "file:" + dir + "/clone.console", "--vsock",
                          "cid=10,uds=" + uds, "--agent-token", kToken, "--agent-token-out",
                          dir + "/token", "--api-sock", dir + "/clone.api", "--timeout", "60"});
  std::set<std::string> tokens;
  for (int i = 0; i < 3; ++i) {
    const std::string token_file = dir + "/token." + std::to_string(i);
    const std::string clone_console = dir + "/clone.console." + std::to_string(i);
    ASSERT_TRUE(wait_for_console(
        clone_console, "post_restore, cid " + std::to_string(10 + i) + ", resets 1, new token"))
        << read_text_file(clone_console) << restore.err();
    // The token file is written once the agent took the notice.
    std::string token;
    for (int tries = 0; tries < 2000 && (token = trim(read_text_file(token_file))).empty(); ++tries)
      usleep(1000);
    ASSERT_EQ(token.size(), 64u) << token_file;
    struct stat st {};
    ASSERT_EQ(stat(token_file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_TRUE(tokens.insert(token).second) << "two clones share a token";
    // The clone's own control API answers.
    auto status = http::http_request(dir + "/clone.api." + std::to_string(i), "GET", "/vm");
    ASSERT_TRUE(status.ok());
    EXPECT_NE(status->body.find("running"), std::string::npos) << status->body;
    // The snapshot's token is no longer accepted; the clone's new one is.
    const std::string clone_uds = uds + "." + std::to_string(i);
    auto old = run_process({carapace_binary(), "agent", "--uds", clone_uds, "--token", kToken,
                            "--io-timeout-ms", "20000", "shutdown"});
    EXPECT_NE(old.exit_code, 0) << old.out;
    auto down = run_process({carapace_binary(), "agent", "--uds", clone_uds, "--token", token,
                             "--io-timeout-ms", "20000", "shutdown"});
    EXPECT_EQ(down.exit_code, 0) << down.out << down.err;
  }
  auto r = restore.finish(std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::string cleanup = "rm -rf " + dir;
  EXPECT_EQ(system(cleanup.c_str()), 0);
}

}  // namespace
}  // namespace carapace::testing
