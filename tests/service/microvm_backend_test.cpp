// The microvm back end (daemon/microvm_*.cpp) over real KVM: templates are built from the
// test guest's agent-ping scenario (a stand-in for the guest agent on vsock port 52), and each
// sandbox is a `carapace restore` process of its own.
#include <dirent.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include "common/agent/agent_client.h"
#include "common/http/http_client.h"
#include "daemon/backends/backend.h"
#include "daemon/backends/microvm/microvm_instance.h"
#include "daemon/backends/microvm_process.h"
#include "tests/integration/process_runner.h"
#include "tests/service/microvm_test_util.h"

namespace carapace::service {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Every test runs twice: VMMs as the daemon's children (Plain), and each inside `carapace jail`
// (Jailed, the daemon's default as root).
INSTANTIATE_TEST_SUITE_P(Vmm, MicrovmBackendTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "Jailed" : "Plain");
                         });

TEST_P(MicrovmBackendTest, TemplateBuildLeavesOnlyTheSnapshot) {
  auto t = create_microvm_backend(spec(0), ctx());
  ASSERT_TRUE(t.ok()) << t.error().describe();
  EXPECT_TRUE(exists(dir_ + "/snapshot"));
  // The boot VM is gone with its sockets and files.
  EXPECT_EQ(entries(dir_), std::set<std::string>{"snapshot"});
  auto d = (*t)->describe();
  EXPECT_GT(d["build_ms"].get<double>(), 0);
  EXPECT_EQ(d["snapshot_reused"], false);
}

bool write_file(const std::string& path, const std::string& text) {
  FILE* f = fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  const bool ok = fwrite(text.data(), 1, text.size(), f) == text.size();
  return fclose(f) == 0 && ok;
}

// A file's identity: a snapshot written again gets a new state file (renamed over the old one).
std::pair<ino_t, int64_t> identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {0, 0};
  return {st.st_ino, static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

// A daemon restarted on the same folder (service_lifecycle.cpp reloads its templates) reuses the
// snapshot its earlier run built: no boot, no new snapshot, and what the earlier run's VMMs left
// (a crash: sockets and logs of pooled VMs, a boot VM's files, fork snapshots) is removed.
TEST_P(MicrovmBackendTest, RestartReusesACompleteSnapshot) {
  double built_ms = 0;
  {
    auto t = create_microvm_backend(spec(1), ctx());
    ASSERT_TRUE(t.ok()) << t.error().describe();
    EXPECT_EQ((*t)->describe()["snapshot_reused"], false);
    built_ms = (*t)->describe()["build_ms"].get<double>();
    ASSERT_TRUE(wait_ready(**t, 1));
    (*t)->shutdown();
  }
  const auto state = identity(dir_ + "/snapshot/state");
  ASSERT_NE(state.first, 0u);
  // Leftovers of a crashed run: VM folders, files of the older one-file-per-socket layout, a
  // fork snapshot, and (jailed) a dead jail with its cgroups.
  for (const char* d : {"i0", "i7", "boot"}) {
    ASSERT_EQ(::mkdir((dir_ + "/" + d).c_str(), 0700), 0) << d;
    ASSERT_TRUE(write_file(dir_ + "/" + d + "/vsock_52", "stale")) << d;
  }
  for (const char* f : {"i0.api", "i0.vsock", "i7.log", "boot.console", "boot.vsock_52"})
    ASSERT_TRUE(write_file(dir_ + "/" + f, "stale")) << f;
  ASSERT_EQ(::mkdir((dir_ + "/forks").c_str(), 0700), 0);
  std::vector<std::string> stale_cgroups;
  if (jailed_) {
    const std::string id = "vm-stale-" + std::to_string(::getpid());
    ::mkdir((dir_ + "/jails").c_str(), 0711);  // the earlier run's jails left the folder
    ASSERT_EQ(::mkdir((dir_ + "/jails/" + id).c_str(), 0711), 0);
    ASSERT_EQ(::mkdir((dir_ + "/jails/" + id + "/run").c_str(), 0700), 0);
    stale_cgroups = make_stale_cgroups(id);
    ASSERT_FALSE(stale_cgroups.empty()) << "no cgroup hierarchy to make a stale jail's cgroup in";
  }
  ASSERT_TRUE(write_file(dir_ + "/template.json", "{}"));  // the daemon's: kept

  auto t = create_microvm_backend(spec(1), ctx());
  ASSERT_TRUE(t.ok()) << t.error().describe();
  auto d = (*t)->describe();
  EXPECT_EQ(d["snapshot_reused"], true) << d.dump();
  const double reused_ms = d["build_ms"].get<double>();
  // Informational: the test guest boots in tens of ms, so the times alone prove little.
  printf("template built in %.1f ms, reused in %.1f ms\n", built_ms, reused_ms);
  RecordProperty("reuse_ms", std::to_string(reused_ms));
  // No boot VM ran and the snapshot was not written again.
  EXPECT_EQ(identity(dir_ + "/snapshot/state"), state);
  ASSERT_TRUE(wait_ready(**t, 1));
  // Left: the snapshot, the daemon's record and the new pooled VM's folder (named i0 again) and
  // its jail; the stale jail's cgroups are gone.
  std::set<std::string> left = entries(dir_);
  left.erase("i0");
  if (jailed_) {
    EXPECT_EQ(left.erase("jails"), 1u);
    EXPECT_EQ(entries(dir_ + "/jails").size(), 1u);  // the new pooled VM's jail only
  }
  EXPECT_EQ(left, (std::set<std::string>{"snapshot", "template.json"}));
  for (const auto& cg : stale_cgroups)
    EXPECT_FALSE(exists(cg)) << "stale cgroup left: " << cg;
  bool from_pool = false;
  auto a = (*t)->acquire({}, &from_pool);
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_TRUE(from_pool);
  expect_agent_answers(**a);
  auto b = (*t)->acquire({}, nullptr);
  ASSERT_TRUE(b.ok()) << b.error().describe();
  expect_agent_answers(**b);
  EXPECT_NE((*a)->agent().token, (*b)->agent().token);
}

// A snapshot that cannot be used (a corrupt state file; a build that died before it finished) is
// removed and the template is built again.
TEST_P(MicrovmBackendTest, RestartRebuildsAnInvalidOrUnfinishedSnapshot) {
  {
    auto t = create_microvm_backend(spec(0), ctx());
    ASSERT_TRUE(t.ok()) << t.error().describe();
  }
  // Corrupt: one byte of the state file flipped (its checksum no longer matches).
  {
    const std::string state = dir_ + "/snapshot/state";
    FILE* f = fopen(state.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(fseek(f, 40, SEEK_SET), 0);
    int c = fgetc(f);
    ASSERT_NE(c, EOF);
    ASSERT_EQ(fseek(f, 40, SEEK_SET), 0);
    fputc(c ^ 0xff, f);
    fclose(f);
  }
  const auto corrupt = identity(dir_ + "/snapshot/state");
  {
    auto t = create_microvm_backend(spec(0), ctx());
    ASSERT_TRUE(t.ok()) << t.error().describe();
    EXPECT_EQ((*t)->describe()["snapshot_reused"], false);
    EXPECT_NE(identity(dir_ + "/snapshot/state"), corrupt);
    auto a = (*t)->acquire({}, nullptr);
    ASSERT_TRUE(a.ok()) << a.error().describe();
    expect_agent_answers(**a);
  }
  // Unfinished: the snapshot's token (written last) is missing.
  ASSERT_EQ(::unlink((dir_ + "/snapshot/agent-token").c_str()), 0);
  auto t = create_microvm_backend(spec(0), ctx());
  ASSERT_TRUE(t.ok()) << t.error().describe();
  EXPECT_EQ((*t)->describe()["snapshot_reused"], false);
  EXPECT_TRUE(exists(dir_ + "/snapshot/agent-token"));
  auto a = (*t)->acquire({}, nullptr);
  ASSERT_TRUE(a.ok()) << a.error().describe();
  expect_agent_answers(**a);
  std::set<std::string> left = entries(dir_);
  left.erase("i0");
  if (jailed_) left.erase("jails");
  EXPECT_EQ(left, std::set<std::string>{"snapshot"});
}

TEST_P(MicrovmBackendTest, AcquireMissWithoutPoolAndFreshTokenPerInstance) {
  auto t = create_microvm_backend(spec(0), ctx());
  ASSERT_TRUE(t.ok()) << t.error().describe();
  bool from_pool = true;
  auto a = (*t)->acquire({}, &from_pool);
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_FALSE(from_pool);
  auto b = (*t)->acquire({}, &from_pool);
  ASSERT_TRUE(b.ok()) << b.error().describe();
  EXPECT_EQ((*t)->pool_stats().misses, 2u);
  expect_agent_answers(**a);
  expect_agent_answers(**b);
  // docs/security.md #25: every instance has its own token, CID and sockets.
  EXPECT_NE((*a)->agent().token, (*b)->agent().token);
  EXPECT_NE((*a)->describe()["cid"], (*b)->describe()["cid"]);
  EXPECT_NE((*a)->agent().path, (*b)->agent().path);
  // b's token is refused by a (agent-ping checks the token on post_restore; ping needs none).
  auto c = AgentClient::connect_vsock_uds((*a)->agent().path);
  ASSERT_TRUE(c.ok()) << c.error().describe();
  c->set_io_timeout_ms(5000);
  c->set_token((*b)->agent().token);
  AgentPostRestore req;
  req.new_token = "00ff";
  auto r = c->post_restore(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(agent_error_code(r.error()), "unauthorized") << r.error().describe();
}

TEST_P(MicrovmBackendTest, PoolHitThenRefill) {
  auto t = create_microvm_backend(spec(2), ctx());
  ASSERT_TRUE(t.ok()) << t.error().describe();
  ASSERT_TRUE(wait_ready(**t, 2)) << "pool never filled";
  bool from_pool = false;
  auto t0 = std::chrono::steady_clock::now();
  auto a = (*t)->acquire({}, &from_pool);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_TRUE(from_pool);
  printf("pool hand-out: %.1f ms (resume + post_restore + ping)\n", ms);
  RecordProperty("handout_ms", std::to_string(ms));
  EXPECT_EQ((*t)->pool_stats().hits, 1u);
  expect_agent_answers(**a);
  EXPECT_TRUE(wait_ready(**t, 2)) << "pool was not refilled";
}

// A pooled VM must not use CPU while it waits: its vCPUs are parked (carapace restore --paused).
TEST_P(MicrovmBackendTest, PooledVmsAreParked) {
  auto t = create_microvm_backend(spec(1), ctx());
  ASSERT_TRUE(t.ok()) << t.error().describe();
  ASSERT_TRUE(wait_ready(**t, 1));
  // Find the pooled VM's API socket and ask it.
  std::string api;
  for (const auto& e : entries(dir_))
    if (e.starts_with("i") && exists(dir_ + "/" + e + "/api")) api = dir_ + "/" + e + "/api";
  ASSERT_FALSE(api.empty());
  auto r = http::http_request(api, "GET", "/vm");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_NE(r->body.find("\"paused\""), std::string::npos) << r->body;
  // And it costs no CPU while it waits (agent-ping busy-polls when it runs: a full core).
  const int pid = pooled_vmm_pid(dir_);
  ASSERT_GT(pid, 0);
  std::this_thread::sleep_for(300ms);  // let it settle after the restore
  const uint64_t before = cpu_ticks(pid);
  std::this_thread::sleep_for(1s);
  EXPECT_LT(cpu_ticks(pid) - before, 5u) << "a pooled VM used CPU while parked";
}

// docs/security.md #31: a pooled VM killed behind the back end's back is detected at acquire and
// replaced; the sandbox handed out is alive and its agent answers.
TEST_P(MicrovmBackendTest, DeadPooledVmIsReplacedAtAcquire) {
  auto t = create_microvm_backend(spec(1), ctx());
  ASSERT_TRUE(t.ok()) << t.error().describe();
  ASSERT_TRUE(wait_ready(**t, 1));
  const int victim = pooled_vmm_pid(dir_);
  ASSERT_GT(victim, 0) << "no pooled VMM found";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  std::this_thread::sleep_for(100ms);
  bool from_pool = true;
  auto a = (*t)->acquire({}, &from_pool);
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_NE((*a)->pid(), victim);
  EXPECT_TRUE((*a)->alive());
  expect_agent_answers(**a);
}

// docs/security.md #31: a pooled VM that is alive but wedged (its VMM stopped: neither the control
// API nor the agent answers) is not handed out; it is killed and the sandbox comes from a fresh
// restore, within a few seconds.
TEST_P(MicrovmBackendTest, WedgedPooledVmIsKilledAndReplaced) {
  auto t = create_microvm_backend(spec(1), ctx());
  ASSERT_TRUE(t.ok()) << t.error().describe();
  ASSERT_TRUE(wait_ready(**t, 1));
  const int wedged = pooled_vmm_pid(dir_);
  ASSERT_GT(wedged, 0);
  ASSERT_EQ(::kill(wedged, SIGSTOP), 0);
  auto t0 = std::chrono::steady_clock::now();
  bool from_pool = true;
  auto a = (*t)->acquire({}, &from_pool);
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 15s);
  EXPECT_NE((*a)->pid(), wedged);
  EXPECT_FALSE(pid_alive(wedged)) << "the wedged VMM was left behind";
  expect_agent_answers(**a);
}

TEST_P(MicrovmBackendTest, PauseResumeAndWrongStates) {
  auto t = create_microvm_backend(spec(0), ctx());
  ASSERT_TRUE(t.ok()) << t.error().describe();
  auto a = (*t)->acquire({}, nullptr);
  ASSERT_TRUE(a.ok()) << a.error().describe();
  Instance& i = **a;
  EXPECT_FALSE(i.paused());
  auto wrong = i.resume();
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().kind, ErrorKind::kInvalidInput);
  ASSERT_TRUE(i.pause().ok());
  EXPECT_TRUE(i.paused());
  auto twice = i.pause();
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().kind, ErrorKind::kInvalidInput);
  ASSERT_TRUE(i.resume().ok());
  EXPECT_FALSE(i.paused());
  expect_agent_answers(i);
  auto counters = i.counters();
  EXPECT_TRUE(counters.contains("console_bytes_written"));
  EXPECT_TRUE(counters.contains("console_bytes_dropped"));
  EXPECT_TRUE(counters.contains("vsock_bad_packets"));
  auto d = i.describe();
  for (const char* key : {"pid", "folder", "api_socket", "vsock_socket", "cid", "console"})
    EXPECT_TRUE(d.contains(key)) << key;
  // The paths the daemon removes after a crash (backend.h): the VM's sockets and files, all
  // inside the template's folder.
  ASSERT_TRUE(d["files"].is_array()) << d.dump();
  EXPECT_FALSE(d["files"].empty());
  std::set<std::string> listed;
  for (const auto& f : d["files"]) {
    ASSERT_TRUE(f.is_string()) << f.dump();
    const std::string path = f.get<std::string>();
    EXPECT_EQ(path.rfind(dir_ + "/", 0), 0u) << path << " is outside " << dir_;
    EXPECT_EQ(path.find("/../"), std::string::npos) << path;
    listed.insert(path);
  }
  // The VM's folder holds its sockets and files; a jailed VM's jail folder is listed too.
  EXPECT_TRUE(listed.contains(d["folder"].get<std::string>())) << d["files"].dump();
  for (const char* key : {"api_socket", "vsock_socket", "console", "log"})
    EXPECT_EQ(d[key].get<std::string>().rfind(d["folder"].get<std::string>() + "/", 0), 0u)
        << key << ": " << d.dump();
  if (jailed_) {
    EXPECT_TRUE(listed.contains(d["jail"]["dir"].get<std::string>())) << d.dump();
  }
}

TEST_P(MicrovmBackendTest, ForkGivesLiveChildrenWithOwnIdentities) {
  auto t = create_microvm_backend(spec(0), ctx());
  ASSERT_TRUE(t.ok()) << t.error().describe();
  auto parent = (*t)->acquire({}, nullptr);
  ASSERT_TRUE(parent.ok()) << parent.error().describe();
  // Workspace mounts need jailed VMMs (the folder is id-mapped into the VM's jail) and fit the
  // template's share slots: refused as bad input before any VM starts, for a create and a fork
  // alike. (The test guest's agent mounts nothing; the real image's does, under `nested`.)
  InstanceOptions with_mount;
  const size_t n = jailed_ ? kShareSlots + 1 : 1;
  for (size_t i = 0; i < n; ++i)
    with_mount.mounts.push_back(
        {"/srv/ws", std::make_shared<const UniqueFd>(), "/work/ws" + std::to_string(i)});
  auto refused_create = (*t)->acquire(with_mount, nullptr);
  auto refused_fork = (*t)->fork(**parent, 1, with_mount);
  ASSERT_FALSE(refused_create.ok());
  ASSERT_FALSE(refused_fork.ok());
  for (const Error& e : {refused_create.error(), refused_fork.error()}) {
    EXPECT_EQ(e.kind, ErrorKind::kInvalidInput);
    EXPECT_EQ(e.message, jailed_ ? "at most 8 mounts on the microvm back end"
                                 : "mounts on the microvm back end need jailed VMMs (the "
                                   "daemon's config says jail: false)");
  }
  auto kids = (*t)->fork(**parent, 2, {});
  ASSERT_TRUE(kids.ok()) << kids.error().describe();
  ASSERT_EQ(kids->size(), 2u);
  std::set<uint32_t> cids{(*parent)->describe()["cid"].get<uint32_t>()};
  std::set<std::string> tokens{(*parent)->agent().token};
  for (auto& k : *kids) {
    EXPECT_TRUE(k->alive());
    cids.insert(k->describe()["cid"].get<uint32_t>());
    tokens.insert(k->agent().token);
    expect_agent_answers(*k);
  }
  EXPECT_EQ(cids.size(), 3u);
  EXPECT_EQ(tokens.size(), 3u);
  // The parent runs on; the fork snapshot is gone (the children's mappings keep its pages).
  EXPECT_TRUE((*parent)->alive());
  EXPECT_FALSE((*parent)->paused());
  expect_agent_answers(**parent);
  EXPECT_TRUE(entries(dir_ + "/forks").empty());
}

TEST_P(MicrovmBackendTest, DestroyCleansEverything) {
  auto t = create_microvm_backend(spec(1), ctx());
  ASSERT_TRUE(t.ok()) << t.error().describe();
  auto a = (*t)->acquire({}, nullptr);
  ASSERT_TRUE(a.ok()) << a.error().describe();
  auto kids = (*t)->fork(**a, 1, {});
  ASSERT_TRUE(kids.ok()) << kids.error().describe();
  std::vector<int> pids{(*a)->pid(), (*kids)[0]->pid()};
  a->reset();
  kids->clear();
  (*t)->shutdown();
  for (int pid : pids)
    EXPECT_FALSE(pid_alive(pid)) << pid;
  std::set<std::string> left = entries(dir_);
  left.erase("forks");
  EXPECT_EQ(left, std::set<std::string>{"snapshot"});
  EXPECT_TRUE(entries(dir_ + "/forks").empty());
}

// docs/security.md #31: a guest whose agent never answers fails the build within its timeout, with
// a one-line error naming the step, and leaves nothing running or behind.
TEST_P(MicrovmBackendTest, SilentAgentFailsCleanlyWithinTimeout) {
  TemplateSpec s = spec(2, "idle");
  s.mem_mib = 128;  // idle fills 16 MiB at 64 MiB
  s.agent_timeout_s = 3;
  auto t0 = std::chrono::steady_clock::now();
  auto t = create_microvm_backend(s, ctx());
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(t.ok());
  const std::string msg = t.error().describe();
  EXPECT_NE(msg.find("agent did not answer within 3 s"), std::string::npos) << msg;
  EXPECT_NE(msg.find("console tail"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_LT(took, 15s);
  EXPECT_TRUE(entries(dir_).empty());
}

// A boot VM that ends at once (unknown scenario: the guest resets) fails the build at once, with
// why: it ended (before its control API or its agent answered, whichever it reached) by a reset.
TEST_P(MicrovmBackendTest, GuestThatExitsFailsTheBuildAtOnce) {
  const auto t0 = std::chrono::steady_clock::now();
  auto t = create_microvm_backend(spec(0, "no-such-scenario"), ctx());
  ASSERT_FALSE(t.ok());
  const std::string msg = t.error().describe();
  EXPECT_NE(msg.find("ended before its"), std::string::npos) << msg;
  EXPECT_NE(msg.find("guest reset"), std::string::npos) << msg;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10)) << msg;
  EXPECT_TRUE(entries(dir_).empty());
}

// A VM's egress proxy goes where the guest's connections to the host's vsock port arrive: the
// VMM's `<uds>_PORT`, a socket only the VMM's user may use (0666 only inside a jail's folder).
TEST_P(MicrovmBackendTest, EgressProxyPlacementIsTheVmmsVsockPort) {
  auto t = create_microvm_backend(spec(0), ctx());
  ASSERT_TRUE(t.ok()) << t.error().describe();
  auto a = (*t)->acquire(InstanceOptions{}, nullptr);
  ASSERT_TRUE(a.ok()) << a.error().describe();
  auto place = (*a)->egress_placement();
  ASSERT_TRUE(place.ok()) << place.error().describe();
  EXPECT_EQ(place->listen_path, (*a)->agent().path + "_1080");
  EXPECT_EQ(place->agent_upstream, "vsock:1080");
  EXPECT_EQ(place->listen_mode, static_cast<mode_t>(GetParam() ? 0666 : 0600));
}

TEST_P(MicrovmBackendTest, BadSpecsAreRefused) {
  TemplateSpec s = spec(0);
  s.vcpus = 0;
  auto t = create_microvm_backend(s, ctx());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind, ErrorKind::kInvalidInput);
  s = spec(0);
  s.kernel.clear();
  EXPECT_FALSE(create_microvm_backend(s, ctx()).ok());
}

// docs/security.md #29: a guest flooding its serial port writes at most the file console's cap;
// the rest is dropped and counted (carapace run --console file:PATH,max=BYTES).
TEST_F(MicrovmVmmTest, SerialFloodIsBoundedByTheConsoleCap) {
  const std::string console = dir_ + "/flood.console";
  auto r =
      testing::run_process({CARAPACE_BINARY, "run", "--kernel", CARAPACE_TESTGUEST, "--mem", "64",
                            "--cmdline", "testguest.run=serial-flood testguest.flood.kib=96",
                            "--console", "file:" + console + ",max=32768"},
                           120s);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  struct stat st;
  ASSERT_EQ(::stat(console.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 32768);
  EXPECT_NE(r.err.find("bytes dropped"), std::string::npos) << r.err;
}

// docs/security.md #31: a guest panic (pvpanic port 0x505) ends the VMM with its own status, 6,
// and the back end's process wrapper names it.
TEST_F(MicrovmVmmTest, GuestPanicHasItsOwnExitStatus) {
  const std::string log = dir_ + "/panic.log";
  auto p = VmmProcess::spawn({CARAPACE_BINARY, "run", "--kernel", CARAPACE_TESTGUEST, "--mem", "64",
                              "--cmdline", "testguest.run=panic", "--console", "file:" + log},
                             dir_ + "/vmm.log");
  ASSERT_TRUE(p.ok()) << p.error().describe();
  ASSERT_TRUE(p->wait_exit(30'000)) << "the VM kept running after its panic";
  EXPECT_FALSE(p->alive());
  EXPECT_EQ(p->describe_exit(), "vmm exited with status 6 (guest panic)") << file_tail(log);
}

// Not a test on its own: the daemon stand-in of VmmsDieWithTheDaemon (it runs only when that
// test starts this binary with CARAPACE_MVB_ORPHAN_DIR set).
TEST_P(MicrovmBackendTest, OrphanHelper) {
  const char* dir = getenv("CARAPACE_MVB_ORPHAN_DIR");
  if (dir == nullptr) return;  // an ordinary run: nothing to do
  // This process is killed, so its TearDown never runs: its own folder goes now.
  fs::remove_all(dir_);
  BackendContext c = ctx();
  c.dir = dir;
  auto t = create_microvm_backend(spec(1), c);
  ASSERT_TRUE(t.ok()) << t.error().describe();
  ASSERT_TRUE(wait_ready(**t, 1));
  // An instance made on a short-lived thread must also outlive that thread.
  std::unique_ptr<Instance> held;
  std::thread([&] {
    auto a = (*t)->acquire({}, nullptr);
    if (a.ok()) held = std::move(*a);
  }).join();
  ASSERT_TRUE(held && held->alive());
  printf("orphan-helper ready\n");
  fflush(stdout);
  std::this_thread::sleep_for(600s);
}

// A daemon that dies, even by SIGKILL, takes its VMMs with it (they are forked on one long-lived
// thread with PR_SET_PDEATHSIG): nothing is left running.
TEST_P(MicrovmBackendTest, VmmsDieWithTheDaemon) {
  if (getenv("CARAPACE_MVB_ORPHAN_DIR") != nullptr) return;
  const std::string helper_dir = dir_ + "/helper";
  ASSERT_EQ(::mkdir(helper_dir.c_str(), 0700), 0);
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(n, 0);
  self[n] = 0;
  ::setenv("CARAPACE_MVB_ORPHAN_DIR", helper_dir.c_str(), 1);
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name = info->name();  // "VmmsDieWithTheDaemon/Plain"
  testing::RunningProcess daemon({self, std::string("--gtest_filter=") + info->test_suite_name() +
                                            ".OrphanHelper" + name.substr(name.find('/'))});
  ::unsetenv("CARAPACE_MVB_ORPHAN_DIR");
  ASSERT_TRUE(daemon.started());
  ASSERT_TRUE(daemon.wait_for_output("orphan-helper ready", 60s)) << daemon.out() << daemon.err();
  // Two VMMs: the one handed out (forked while its requester thread lived) and the pooled one.
  auto vmms = [&] {
    int count = 0;
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      FILE* f = fopen(("/proc/" + name + "/cmdline").c_str(), "r");
      if (!f) continue;
      char buf[4096];
      size_t len = fread(buf, 1, sizeof buf, f);
      fclose(f);
      if (std::string(buf, len).find(helper_dir) != std::string::npos) ++count;
    }
    return count;
  };
  EXPECT_GE(vmms(), 2);
  ASSERT_EQ(::kill(daemon.pid(), SIGKILL), 0);
  daemon.finish(5s);
  auto until = std::chrono::steady_clock::now() + 5s;
  while (vmms() > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(20ms);
  EXPECT_EQ(vmms(), 0) << "VMMs outlived their daemon";
  if (jailed_) {
    // Their supervisors died by SIGKILL too: jail folders and cgroups stay until the next daemon
    // on this folder reloads the template, which removes them (as here).
    std::vector<std::string> cgroups;
    for (const auto& id : entries(helper_dir + "/jails"))
      for (const auto& cg : jail_cgroup_dirs(id))
        cgroups.push_back(cg);
    EXPECT_FALSE(cgroups.empty()) << "expected the dead jails' cgroups";
    BackendContext c = ctx();
    c.dir = helper_dir;
    auto t = create_microvm_backend(spec(0), c);
    ASSERT_TRUE(t.ok()) << t.error().describe();
    EXPECT_EQ((*t)->describe()["snapshot_reused"], true);
    for (const auto& cg : cgroups)
      EXPECT_FALSE(exists(cg)) << "stale cgroup left: " << cg;
    EXPECT_TRUE(entries(helper_dir + "/jails").empty());
  }
}

}  // namespace
}  // namespace carapace::service
