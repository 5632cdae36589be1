// Restart after a crash: a daemon killed with SIGKILL leaves its sandboxes' processes and files
// behind; the next daemon on the same state dir kills those processes (only if they still are the
// recorded ones), removes their files and reloads the templates. Also SIGTERM → clean exit 0.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "daemon/core/state_store.h"
#include "tests/service/daemon_harness.h"

namespace carapace::testing {
namespace {

using nlohmann::json;

class RestartTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    // Orphaned agents become our children (zombies we can see and reap), not init's.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  void TearDown() override {
    for (pid_t p : {child_}) {
      if (p > 0) {
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0);
      }
    }
    for (int pid : orphans_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    ::prctl(PR_SET_CHILD_SUBREAPER, 0);
    if (HasFailure()) std::cerr << "fake serve log:\n" << read_text_file(dir_ + "/serve.log");
    DaemonTest::TearDown();
  }

  // Starts service_fake_serve and waits until it answers.
  void spawn_daemon() {
    int log =
        ::open((dir_ + "/serve.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    std::vector<std::string> args = {CARAPACE_FAKE_SERVE, "--socket", socket_, "--state-dir",
                                     state_dir_};
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    child_ = ::fork();
    if (child_ == 0) {
      ::dup2(log, 2);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(log);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < until) {
      auto r = http::http_request(socket_, "GET", "/health");
      if (r.ok() && r->status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << "service_fake_serve did not answer";
  }

  pid_t child_ = -1;
  std::vector<int> orphans_;
};

TEST_F(RestartTest, CrashLeftoversAreCleanedUpAndTemplatesReloaded) {
  spawn_daemon();
  std::string tpl = make_template(0);
  json sb = make_sandbox(tpl);
  int agent = sb["backend"]["pid"];
  std::string files = sb["backend"]["files"][0];
  orphans_.push_back(agent);
  ASSERT_TRUE(path_exists(files));

  ASSERT_EQ(::kill(child_, SIGKILL), 0);
  ASSERT_EQ(::waitpid(child_, nullptr, 0), child_);
  child_ = -1;
  EXPECT_TRUE(process_alive(agent)) << "the agent should outlive a crashed daemon";

  spawn_daemon();
  EXPECT_FALSE(process_alive(agent)) << "the leftover agent was not killed";
  EXPECT_FALSE(path_exists(files)) << "the leftover instance files were not removed";
  EXPECT_FALSE(path_exists(state_dir_ + "/sandboxes/" + sb["id"].get<std::string>() + ".json"));
  EXPECT_EQ(body_json(call("GET", "/sandboxes"))["sandboxes"].size(), 0u);
  EXPECT_EQ(call("GET", "/templates/" + tpl).status, 200);
  EXPECT_NE(read_text_file(dir_ + "/serve.log").find("cleaned up"), std::string::npos);
  // The reloaded template serves sandboxes.
  json again = make_sandbox(tpl);
  orphans_.push_back(again["backend"]["pid"]);

  // SIGTERM: clean exit 0, sandboxes destroyed, socket removed.
  ASSERT_EQ(::kill(child_, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child_, &status, 0), child_);
  child_ = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_FALSE(process_alive(again["backend"]["pid"]));
  EXPECT_FALSE(path_exists(socket_));
  EXPECT_FALSE(path_exists(state_dir_ + "/templates/" + tpl));
}

// A record left on disk can be anything (a crash mid-write, a disk error, a hand edit): fields of
// the wrong type, cgroup names that are paths, files outside the state dir. The next daemon starts,
// drops the record, and touches nothing outside its state dir.
TEST_F(RestartTest, CorruptSandboxRecordsAreDroppedWithoutHarm) {
  const std::string outside = dir_ + "/outside.txt";
  { std::ofstream(outside) << "keep\n"; }
  ASSERT_EQ(::mkdir(state_dir_.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((state_dir_ + "/sandboxes").c_str(), 0700), 0);
  const json bad = {
      {"id", 7},
      {"pid", "1"},
      {"pid_start", -1},
      {"backend", {{"cgroups", {"..", "../../unified", 3}}, {"files", {1, outside}}}}};
  {
    std::ofstream(state_dir_ + "/sandboxes/sb-000000000001.json") << bad.dump();
    std::ofstream(state_dir_ + "/sandboxes/sb-000000000002.json")
        << json{{"id", "sb-000000000002"}, {"pid", 1.5}, {"backend", "files"}}.dump();
  }
  spawn_daemon();
  EXPECT_EQ(call("GET", "/health").status, 200);
  EXPECT_TRUE(path_exists(outside)) << "a file outside the state dir was removed";
  EXPECT_FALSE(path_exists(state_dir_ + "/sandboxes/sb-000000000001.json"));
  EXPECT_FALSE(path_exists(state_dir_ + "/sandboxes/sb-000000000002.json"));
  EXPECT_EQ(body_json(call("GET", "/sandboxes"))["sandboxes"].size(), 0u);
  EXPECT_NE(read_text_file(dir_ + "/serve.log").find("is not a jail's cgroup name"),
            std::string::npos);
}

TEST(StateStore, KillsOnlyTheRecordedProcess) {
  pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  uint64_t start = service::process_start_time(child);
  ASSERT_NE(start, 0u);
  // A pid whose start time differs is a different (reused) process: left alone.
  EXPECT_FALSE(service::kill_if_same_process(child, start + 1));
  EXPECT_TRUE(process_alive(child));
  EXPECT_TRUE(service::kill_if_same_process(child, start));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(service::process_start_time(child), 0u);
  EXPECT_FALSE(service::kill_if_same_process(child, start));
}

}  // namespace
}  // namespace carapace::testing
