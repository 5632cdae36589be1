// The microvm back end with each VMM inside `carapace jail` (the daemon's default as root): what a
// daemon-made VMM can see and do (docs/security.md #32), that its jail goes with it (30), and that
// the daemon never follows a link the VMM plants in its folder (28).
#include <sys/socket.h>
#include <sys/un.h>

#include <gtest/gtest.h>

#include "common/base/unique_fd.h"
#include "daemon/backends/microvm/microvm_instance.h"
#include "tests/integration/proc_status.h"
#include "tests/service/microvm_test_util.h"

namespace carapace::service {
namespace {

using namespace std::chrono_literals;
using carapace::testing::proc_status_field;

class MicrovmJailTest : public MicrovmFixture {
 protected:
  void SetUp() override {
    jailed_ = true;
    MicrovmFixture::SetUp();
  }
};

std::string first_component(const std::string& path) {
  return path.substr(1, path.find('/', 1) - 1);
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

// The limit `file` of jail `id`, from whichever hierarchy holds it here (v1 name, v2 name).
std::string cgroup_value(const std::string& id, const char* v1_controller, const char* v1_file,
                         const char* v2_file) {
  const std::string v1 = std::string("/sys/fs/cgroup/") + v1_controller + "/carapace/" + id;
  if (exists(v1 + "/" + v1_file)) return trim(read_text_file(v1 + "/" + v1_file));
  for (const char* v2 : {"/sys/fs/cgroup/unified/carapace/", "/sys/fs/cgroup/carapace/"})
    if (exists(v2 + id + "/" + v2_file)) return trim(read_text_file(v2 + id + "/" + v2_file));
  return "(none)";
}

// docs/security.md #32: a VMM the daemon starts for a sandbox (from the pool, and a fork child)
// runs as a uid of its own with no capabilities, under seccomp, in its own namespaces, with a
// root holding only its files and cgroup limits sized from the template.
TEST_F(MicrovmJailTest, DaemonMadeVmmsAreJailed) {
  auto t = create_microvm_backend(spec(1), ctx());
  ASSERT_TRUE(t.ok()) << t.error().describe();
  ASSERT_TRUE(wait_ready(**t, 1));
  bool from_pool = false;
  auto a = (*t)->acquire({}, &from_pool);
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_TRUE(from_pool);
  expect_agent_answers(**a);
  auto kids = (*t)->fork(**a, 1, {});
  ASSERT_TRUE(kids.ok()) << kids.error().describe();
  expect_agent_answers(*(*kids)[0]);

  std::set<std::string> uids, jail_ids;
  for (Instance* inst : {a->get(), (*kids)[0].get()}) {
    SCOPED_TRACE(inst->describe().dump());
    const auto d = inst->describe();
    ASSERT_TRUE(d.contains("jail")) << d.dump();
    const std::string id = d["jail"]["id"].get<std::string>();
    const std::string uid = std::to_string(d["jail"]["host_uid"].get<uint32_t>());
    jail_ids.insert(id);
    uids.insert(uid);
    const int vmm = carapace::testing::proc_first_child(
        inst->pid());  // the back end's process is the jail supervisor
    ASSERT_GT(vmm, 0);
    const std::string p = std::to_string(vmm);
    EXPECT_EQ(cmdline_of(p).at(1), "restore");

    EXPECT_NE(uid, "0");
    EXPECT_EQ(proc_status_field(vmm, "Uid"), uid + "\t" + uid + "\t" + uid + "\t" + uid);
    EXPECT_EQ(proc_status_field(vmm, "Gid"), uid + "\t" + uid + "\t" + uid + "\t" + uid);
    carapace::testing::expect_confined(vmm);

    // Its root: the binary and its libraries, the kernel image's folder (not bound: a restore
    // reads only the snapshot), the template's snapshot and its own folder; /dev, /tmp, /run and
    // its own /proc. Of the template's folder it sees the snapshot and itself, no other VM.
    const std::string root = "/proc/" + p + "/root";
    const std::set<std::string> allowed = {"dev",
                                           "tmp",
                                           "run",
                                           "proc",
                                           "lib",
                                           "lib64",
                                           "usr",
                                           first_component(CARAPACE_BINARY),
                                           first_component(dir_)};
    for (const std::string& e : entries(root))
      EXPECT_TRUE(allowed.count(e)) << "unexpected /" << e;
    const std::string folder = d["folder"].get<std::string>();
    const std::string snapshot = inst == a->get() ? dir_ + "/snapshot" : "";
    std::set<std::string> seen = entries(root + dir_);
    EXPECT_TRUE(seen.count(folder.substr(folder.rfind('/') + 1))) << folder;
    if (!snapshot.empty()) {
      EXPECT_TRUE(seen.count("snapshot"));
    }
    EXPECT_LE(seen.size(), 2u) << "the VM sees more of the template's folder than it needs";
    EXPECT_FALSE(exists(root + dir_ + "/jails")) << "the VM sees the jails";
    EXPECT_TRUE(exists(root + folder + "/api"));
    // /proc shows the jail's processes only (the VMM is PID 1 there).
    EXPECT_TRUE(exists(root + "/proc/1"));
    EXPECT_FALSE(exists(root + "/proc/" + std::to_string(::getpid())));
    EXPECT_FALSE(exists(root + "/proc/sys"));

    // Cgroup limits from the template: 64 MiB of guest RAM + 128 MiB for the VMM; pids and CPU.
    const uint64_t mem = (64 + 128) << 20;
    const std::string mem_limit = cgroup_value(id, "memory", "memory.limit_in_bytes", "memory.max");
    EXPECT_EQ(mem_limit, std::to_string(mem));
    EXPECT_EQ(cgroup_value(id, "pids", "pids.max", "pids.max"), "66");
    const std::string cpu = cgroup_value(id, "cpu", "cpu.cfs_quota_us", "cpu.max");
    EXPECT_TRUE(cpu == "200000" || cpu == "200000 100000") << cpu;
  }
  EXPECT_EQ(uids.size(), 2u) << "two VMs share a uid";
  EXPECT_EQ(jail_ids.size(), 2u);

  // docs/security.md #30: destroying the sandboxes removes their jails and cgroups.
  std::vector<int> supervisors{(*a)->pid(), (*kids)[0]->pid()};
  a->reset();
  kids->clear();
  for (int pid : supervisors)
    EXPECT_FALSE(pid_alive(pid)) << pid;
  (*t)->shutdown();
  for (const auto& id : jail_ids)
    for (const auto& cg : jail_cgroup_dirs(id))
      ADD_FAILURE() << "cgroup left behind: " << cg;
  EXPECT_TRUE(entries(dir_ + "/jails").empty());
  EXPECT_TRUE(entries(dir_ + "/forks").empty());
  std::set<std::string> left = entries(dir_);
  left.erase("forks");
  EXPECT_EQ(left, std::set<std::string>{"snapshot"});
}

// docs/security.md #28: a compromised VMM owns its folder and could swap its API or vsock socket
// for a link to some host socket; the daemon refuses the link instead of connecting through it.
TEST_F(MicrovmJailTest, ALinkPlantedForASocketIsNotFollowed) {
  auto t = create_microvm_backend(spec(0), ctx());
  ASSERT_TRUE(t.ok()) << t.error().describe();
  auto a = (*t)->acquire({}, nullptr);
  ASSERT_TRUE(a.ok()) << a.error().describe();
  auto* vm = dynamic_cast<MicrovmInstance*>(a->get());
  ASSERT_NE(vm, nullptr);

  // A host socket the daemon must never reach.
  const std::string bait = dir_ + "/bait.sock";
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s", bait.c_str());
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener.get(), 8), 0);

  for (const std::string& sock : {vm->paths().api_sock, vm->paths().vsock_uds}) {
    ASSERT_EQ(::rename(sock.c_str(), (sock + ".real").c_str()), 0);
    ASSERT_EQ(::symlink(bait.c_str(), sock.c_str()), 0);
  }
  auto paused = vm->pause();
  ASSERT_FALSE(paused.ok());
  EXPECT_NE(paused.error().describe().find("symbolic link"), std::string::npos)
      << paused.error().describe();
  auto agent = vm->agent().connect();
  ASSERT_FALSE(agent.ok());
  EXPECT_NE(agent.error().describe().find("symbolic link"), std::string::npos)
      << agent.error().describe();
  EXPECT_LT(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC), 0)
      << "the daemon connected through the planted link";
  // Put back, the VM answers again: nothing was changed by the refused calls.
  for (const std::string& sock : {vm->paths().api_sock, vm->paths().vsock_uds}) {
    ASSERT_EQ(::unlink(sock.c_str()), 0);
    ASSERT_EQ(::rename((sock + ".real").c_str(), sock.c_str()), 0);
  }
  EXPECT_FALSE(vm->paused());
  expect_agent_answers(*vm);
}

// A kernel (or rootfs) the jailed VMM's uid could not read is refused when the template is made,
// with a message saying what to change, not at the first restore.
TEST_F(MicrovmJailTest, FilesAJailedVmmCannotReadAreRefused) {
  const std::string kernel = dir_ + "/private-kernel";
  std::filesystem::copy_file(CARAPACE_TESTGUEST, kernel);
  ASSERT_EQ(::chmod(kernel.c_str(), 0600), 0);
  TemplateSpec s = spec(0);
  s.kernel = kernel;
  auto t = create_microvm_backend(s, ctx());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(t.error().describe().find("readable by others"), std::string::npos)
      << t.error().describe();
}

// A state folder where the jail has its own tree (/run, /dev, ...) is refused up front.
TEST_F(MicrovmJailTest, StateFolderUnderTheJailsOwnTreesIsRefused) {
  BackendContext c = ctx();
  c.dir = "/run/carapace-test-state/templates/tpl-x";
  auto t = create_microvm_backend(spec(0), c);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(t.error().describe().find("is under /run"), std::string::npos) << t.error().describe();
  EXPECT_FALSE(exists("/run/carapace-test-state"));
}

// docs/security.md #30: a jailed VMM that dies (SIGKILL here, as from the OOM killer at its memory
// limit: JailKvm.MemoryLimitKillsOnlyThatVm) is reported as such and its jail and cgroups go.
TEST_F(MicrovmJailTest, VmKilledInItsJailIsReportedAndCleanedUp) {
  auto t = create_microvm_backend(spec(0), ctx());
  ASSERT_TRUE(t.ok()) << t.error().describe();
  auto a = (*t)->acquire({}, nullptr);
  ASSERT_TRUE(a.ok()) << a.error().describe();
  const std::string id = (*a)->describe()["jail"]["id"].get<std::string>();
  const int vmm = carapace::testing::proc_first_child((*a)->pid());
  ASSERT_GT(vmm, 0);
  ASSERT_EQ(::kill(vmm, SIGKILL), 0);
  auto until = std::chrono::steady_clock::now() + 10s;
  while ((*a)->alive() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  EXPECT_FALSE((*a)->alive());
  EXPECT_EQ((*a)->exit_description(), "vmm killed by SIGKILL");
  // The supervisor removed the jail when its VMM died; destroying the sandbox removes the rest.
  EXPECT_TRUE(jail_cgroup_dirs(id).empty());
  a->reset();
  EXPECT_TRUE(entries(dir_ + "/jails").empty());
}

}  // namespace
}  // namespace carapace::service
