// The process back end (daemon/backends/process/process_backend.cpp) with the real guest image: a
// template fills its pool, a sandbox is handed out from it and runs commands through its agent,
// pauses and resumes through the cgroup freezer, cannot fork, reports how it ended, and leaves
// nothing behind once destroyed (docs/security.md #30). Needs root and build/guest/rootfs.ext4
// (label image).
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include "daemon/backends/backend.h"
#include "tests/integration/host_leak_scan.h"
#include "tests/integration/process_cgroups.h"

namespace carapace::service {
namespace {

bool exists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

using carapace::testing::agent_pid_in;
using carapace::testing::sandbox_v1_cgroup_dirs;

class ProcessBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "the process back end needs root (loop mount, namespaces)";
    const char* env = std::getenv("CARAPACE_ROOTFS");
    rootfs_ = env ? env : CARAPACE_ROOTFS;
    ASSERT_TRUE(exists(rootfs_)) << rootfs_ << " missing: build it (ctest -R rootfs_build)";
    dir_ = "/tmp/carapace-process-backend-" + std::to_string(getpid());
    ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
    ctx_.template_id = "tpl-test" + std::to_string(getpid() % 10000);
    ctx_.dir = dir_;
    ctx_.carapace_exe = CARAPACE_BINARY;
    ctx_.agent_exe = CARAPACE_AGENT;
    spec_.isolation = Isolation::kProcess;
    spec_.rootfs = rootfs_;
    spec_.mem_mib = 256;
    spec_.pool_size = 1;
    spec_.agent_timeout_s = 30;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // Everything of sandbox `name` that should be gone once it is destroyed.
  std::string leftovers(const std::string& name) {
    std::string left;
    if (exists(dir_ + "/jails/" + name)) left += " jail;";
    if (exists(dir_ + "/" + name + ".sock")) left += " socket;";
    if (exists(dir_ + "/" + name + ".token")) left += " token;";
    for (const auto& d : sandbox_v1_cgroup_dirs(name))
      left += " " + d + ";";
    return left;
  }

  std::string rootfs_, dir_;
  BackendContext ctx_;
  TemplateSpec spec_;
};

TEST_F(ProcessBackendTest, PoolExecPauseDestroySecurityChecks30) {
  auto tpl = create_process_backend(spec_, ctx_);
  ASSERT_TRUE(tpl.ok()) << tpl.error().describe();
  EXPECT_NE((*tpl)->describe().dump().find("weaker than a microVM"), std::string::npos);
  EXPECT_EQ((*tpl)->pool_stats().ready, 1u);
  bool from_pool = false;
  auto sb = (*tpl)->acquire({}, &from_pool);
  ASSERT_TRUE(sb.ok()) << sb.error().describe();
  EXPECT_TRUE(from_pool);
  const std::string name = ctx_.template_id + "-0";
  EXPECT_FALSE(exists(dir_ + "/" + name + ".token")) << "token file left after start";
  // The paths the daemon removes after a crash (backend.h): all inside the template's folder,
  // the agent socket and the jail among them.
  {
    const auto files = (*sb)->describe()["files"];
    ASSERT_TRUE(files.is_array());
    EXPECT_FALSE(files.empty());
    std::set<std::string> listed;
    for (const auto& f : files) {
      ASSERT_TRUE(f.is_string()) << f.dump();
      const std::string path = f.get<std::string>();
      EXPECT_EQ(path.rfind(dir_ + "/", 0), 0u) << path << " is outside " << dir_;
      EXPECT_EQ(path.find("/../"), std::string::npos) << path;
      listed.insert(path);
    }
    EXPECT_TRUE(listed.contains((*sb)->agent().path)) << files.dump();
    EXPECT_TRUE(listed.contains(dir_ + "/jails/" + name)) << files.dump();
  }
  {
    auto c = (*sb)->agent().connect();
    ASSERT_TRUE(c.ok()) << c.error().describe();
    std::string out;
    auto r = c->exec(
        {"/bin/sh", "-c", "echo hello from $(hostname); id -u"}, {},
        [&](std::string_view s) { out.append(s); }, nullptr);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(out, "hello from " + name + "\n1000\n");
  }
  // Paused: the agent is frozen and does not answer; resumed, it does.
  ASSERT_TRUE((*sb)->pause().ok());
  EXPECT_TRUE((*sb)->paused());
  EXPECT_FALSE((*sb)->pause().ok());
  {
    auto c = (*sb)->agent().connect();
    if (c.ok()) {
      c->set_io_timeout_ms(300);
      EXPECT_FALSE(c->ping().ok()) << "a paused sandbox answered";
    }
  }
  ASSERT_TRUE((*sb)->resume().ok());
  {
    auto c = (*sb)->agent().connect();
    ASSERT_TRUE(c.ok());
    c->set_io_timeout_ms(5000);
    EXPECT_TRUE(c->ping().ok());
  }
  auto forked = (*tpl)->fork(**sb, 1, {});
  ASSERT_FALSE(forked.ok());
  EXPECT_EQ(forked.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(forked.error().describe().find("fork needs isolation microvm"), std::string::npos);
  // The egress proxy's place: the jail's egress folder, root's and empty until a proxy binds.
  auto place = (*sb)->egress_placement();
  ASSERT_TRUE(place.ok()) << place.error().describe();
  EXPECT_EQ(place->listen_path, dir_ + "/jails/" + name + "/egress/proxy.sock");
  EXPECT_EQ(place->agent_upstream, "unix:/run/carapace-egress/proxy.sock");
  EXPECT_EQ(place->listen_mode, 0666u);
  struct stat st {};
  ASSERT_EQ(::lstat((dir_ + "/jails/" + name + "/egress").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_FALSE(exists(place->listen_path));

  EXPECT_TRUE((*sb)->alive());
  sb->reset();
  EXPECT_EQ(leftovers(name), "");
  (*tpl)->shutdown();
  EXPECT_EQ(leftovers(ctx_.template_id + "-1"), "");
}

TEST_F(ProcessBackendTest, AgentKilledIsReportedAndCleanedSecurityChecks30) {
  spec_.pool_size = 0;
  auto tpl = create_process_backend(spec_, ctx_);
  ASSERT_TRUE(tpl.ok()) << tpl.error().describe();
  bool from_pool = true;
  auto sb = (*tpl)->acquire({}, &from_pool);
  ASSERT_TRUE(sb.ok()) << sb.error().describe();
  EXPECT_FALSE(from_pool);
  const std::string name = ctx_.template_id + "-1";
  const pid_t agent = agent_pid_in(sandbox_v1_cgroup_dirs(name));
  ASSERT_GT(agent, 0);
  ASSERT_EQ(::kill(agent, SIGKILL), 0);
  for (int i = 0; i < 500 && (*sb)->alive(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE((*sb)->alive());
  EXPECT_EQ((*sb)->exit_description(), "agent killed by SIGKILL");
  EXPECT_EQ(leftovers(name), "") << "the supervisor left these";
  sb->reset();
}

TEST_F(ProcessBackendTest, RefusesBadSpecs) {
  TemplateSpec s = spec_;
  s.rootfs = "";
  EXPECT_FALSE(create_process_backend(s, ctx_).ok());
  s = spec_;
  s.rootfs = "/nonexistent.ext4";
  EXPECT_FALSE(create_process_backend(s, ctx_).ok());
  s = spec_;
  s.kernel = "/boot/vmlinuz";
  EXPECT_FALSE(create_process_backend(s, ctx_).ok());
}

// The daemon's sandbox: nothing in its /proc names the daemon's state folder, the carapace
// binary, the agent socket, the token file or the sandbox's host uid.
TEST_F(ProcessBackendTest, NoProcessShowsTheDaemonsPathsOrIds) {
  spec_.pool_size = 0;
  auto tpl = create_process_backend(spec_, ctx_);
  ASSERT_TRUE(tpl.ok()) << tpl.error().describe();
  auto sb = (*tpl)->acquire({}, nullptr);
  ASSERT_TRUE(sb.ok()) << sb.error().describe();
  const auto info = (*sb)->describe();
  ASSERT_TRUE(info["host_uid"].is_number()) << info.dump();
  auto c = (*sb)->agent().connect();
  ASSERT_TRUE(c.ok()) << c.error().describe();
  std::string out;
  auto r = c->exec(
      {"/bin/sh", "-c", carapace::testing::kProcScanScript}, {},
      [&](std::string_view s) { out.append(s); }, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  carapace::testing::expect_no_host_strings(
      out, {dir_, CARAPACE_BINARY, CARAPACE_AGENT, rootfs_, (*sb)->agent().path,
            std::to_string(info["host_uid"].get<uint64_t>())});
  sb->reset();
  (*tpl)->shutdown();
}

}  // namespace
}  // namespace carapace::service
