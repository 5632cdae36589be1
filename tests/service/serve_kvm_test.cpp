// `carapace serve` over real KVM with the microvm back end and the test guest's agent-ping
// scenario (label kvm): templates with and without a pool, sandboxes from the pool and restored,
// pause/resume, fork, delete, metrics, and a clean SIGTERM. The test guest's agent answers only
// ping/post_restore/shutdown, so exec and files are covered by the unit tests over the fake back
// end.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/integration/proc_status.h"
#include "tests/integration/process_runner.h"
#include "tests/service/daemon_harness.h"

namespace carapace::testing {
namespace {

using nlohmann::json;

class ServeKvmTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    ASSERT_TRUE(path_exists("/dev/kvm")) << "these tests need /dev/kvm";
    ASSERT_TRUE(path_exists(CARAPACE_TESTGUEST)) << "build the testguest target first";
    std::string config = dir_ + "/config.json";
    std::ofstream(config) << R"({"health_interval_s": 1, "health_timeout_s": 5})";
    serve_ = std::make_unique<RunningProcess>(
        std::vector<std::string>{CARAPACE_BINARY, "serve", "--socket", socket_, "--state-dir",
                                 state_dir_, "--config", config});
    ASSERT_TRUE(serve_->started());
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < until) {
      auto r = http::http_request(socket_, "GET", "/health");
      if (r.ok() && r->status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << "carapace serve did not answer";
  }
  void TearDown() override {
    if (serve_) {
      ::kill(serve_->pid(), SIGTERM);
      ProcessResult r = serve_->finish(std::chrono::seconds(60));
      if (HasFailure()) std::cerr << "carapace serve stderr:\n" << r.err;
    }
    DaemonTest::TearDown();
  }

  std::string microvm_template(uint32_t pool) {
    json body = {{"isolation", "microvm"},
                 {"kernel", CARAPACE_TESTGUEST},
                 {"boot_args", "testguest.run=agent-ping"},
                 {"mem_mib", 64},
                 {"pool_size", pool},
                 {"agent_timeout_s", 30}};
    auto r = call("POST", "/templates", body.dump());
    EXPECT_EQ(r.status, 201) << r.body;
    return body_json(r).value("id", "");
  }

  bool wait_pool_ready(const std::string& tpl, int n) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < until) {
      if (body_json(call("GET", "/templates/" + tpl))["pool"]["ready"].get<int>() >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  std::unique_ptr<RunningProcess> serve_;
};

TEST_F(ServeKvmTest, SandboxLifecycleOverKvm) {
  auto health = body_json(call("GET", "/health"));
  EXPECT_EQ(health["default_isolation"], "microvm");
  EXPECT_EQ(health["kvm"], true);
  EXPECT_TRUE(health["cpu_virtualization"].is_string());
  // As root with the default config, every VMM the daemon starts is jailed.
  EXPECT_EQ(health["jailed_vmms"], ::geteuid() == 0);

  std::string pooled = microvm_template(1);
  ASSERT_FALSE(pooled.empty());
  ASSERT_TRUE(wait_pool_ready(pooled, 1));
  json a = make_sandbox(pooled);
  EXPECT_EQ(a["from_pool"], true);
  EXPECT_EQ(a["state"], "running");
  // docs/security.md #32: the daemon-made VMM (the jail supervisor's child) runs as the sandbox's
  // own uid with no capabilities, under seccomp, in namespaces of its own.
  ASSERT_TRUE(a["backend"].contains("jail")) << a.dump();
  const std::string jail_id = a["backend"]["jail"]["id"];
  {
    const int vmm = proc_first_child(a["backend"]["pid"].get<int>());
    ASSERT_GT(vmm, 0);
    const std::string uid = std::to_string(a["backend"]["jail"]["host_uid"].get<uint32_t>());
    EXPECT_NE(uid, "0");
    EXPECT_EQ(proc_status_field(vmm, "Uid"), uid + "\t" + uid + "\t" + uid + "\t" + uid);
    EXPECT_EQ(proc_status_field(vmm, "CapEff"), "0000000000000000");
    EXPECT_EQ(proc_status_field(vmm, "CapBnd"), "0000000000000000");
    EXPECT_EQ(proc_status_field(vmm, "Seccomp"), "2");
    for (const char* ns : {"mnt", "pid", "net", "ipc", "uts"})
      EXPECT_NE(proc_ns_link(std::to_string(vmm), ns), proc_ns_link("self", ns)) << ns;
  }

  std::string cold = microvm_template(0);
  json b = make_sandbox(cold);
  EXPECT_EQ(b["from_pool"], false);
  std::string id = b["id"];

  auto p = call("POST", "/sandboxes/" + id + "/pause");
  ASSERT_EQ(p.status, 200) << p.body;
  EXPECT_EQ(body_json(p)["state"], "paused");
  EXPECT_EQ(call("POST", "/sandboxes/" + id + "/pause").status, 409);  // docs/security.md #27
  auto r = call("POST", "/sandboxes/" + id + "/resume");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body_json(r)["state"], "running");

  auto f = call("POST", "/sandboxes/" + id + "/fork", R"({"count": 2})");
  ASSERT_EQ(f.status, 201) << f.body;
  json children = body_json(f)["children"];
  EXPECT_EQ(children.size(), 2u);
  EXPECT_EQ(body_json(call("GET", "/sandboxes"))["sandboxes"].size(), 4u);

  // Survives a health check round with every sandbox answering ping.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(body_json(call("GET", "/sandboxes"))["sandboxes"].size(), 4u);

  std::string metrics = call("GET", "/metrics").body;
  EXPECT_NE(metrics.find("carapace_sandboxes 4\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("carapace_templates 2\n"), std::string::npos);
  EXPECT_NE(metrics.find("carapace_pool_hits_total{template=\"" + pooled + "\"} 1\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("carapace_pool_misses_total{template=\"" + cold + "\"} 1\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("carapace_sandbox_create_seconds_count{source=\"pool\"} 1\n"),
            std::string::npos);
  EXPECT_EQ(metrics.find("carapace_sandboxes_failed_total{"), std::string::npos) << metrics;

  for (const auto& c : children)
    EXPECT_EQ(call("DELETE", "/sandboxes/" + c["id"].get<std::string>()).status, 204);
  EXPECT_EQ(call("DELETE", "/sandboxes/" + id).status, 204);
  EXPECT_EQ(call("DELETE", "/templates/" + cold).status, 204);
  EXPECT_FALSE(process_alive(b["backend"]["pid"].get<int>()));

  // SIGTERM: exit 0, every VMM process gone, the state dir emptied.
  int pid_a = a["backend"]["pid"];
  ASSERT_EQ(::kill(serve_->pid(), SIGTERM), 0);
  ProcessResult done = serve_->finish(std::chrono::seconds(60));
  serve_.reset();
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_FALSE(process_alive(pid_a));
  EXPECT_FALSE(path_exists(state_dir_ + "/templates/" + pooled));
  for (const char* tree : {"/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"})
    EXPECT_FALSE(path_exists(std::string(tree) + "/carapace/" + jail_id)) << tree;
}

}  // namespace
}  // namespace carapace::testing
