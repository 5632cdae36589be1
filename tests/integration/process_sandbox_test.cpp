// The process isolation back end: `carapace run --isolation process` runs the real
// guest agent from build/guest/rootfs.ext4 in a jail on the host kernel. The agent makes all four
// documents; the workload sees no host file, no host process and no network, cannot ptrace or
// mount, is OOM-killed at its memory limit while the agent and host live on; path checks hold
// (docs/security.md #28); and however the sandbox ends, its jail folder, cgroups and socket go
// (docs/security.md #30). Needs root and the image (the `rootfs` fixture); fails, never skips.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "jailer/cgroup.h"
#include "jailer/supervisor.h"
#include "tests/integration/host_leak_scan.h"
#include "tests/integration/process_sandbox_harness.h"

namespace carapace::testing {
namespace {

::testing::AssertionResult prerequisites() {
  if (geteuid() != 0)
    return ::testing::AssertionFailure()
           << "the process sandbox tests must run as root (loop mount, namespaces, cgroups)";
  if (!path_exists(process_rootfs()))
    return ::testing::AssertionFailure()
           << process_rootfs() << " missing: build it (ctest -R rootfs_build)";
  return ::testing::AssertionSuccess();
}

class ProcessSandboxTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(prerequisites()); }
};

// Starts a sandbox and waits for its agent; fails the test with the supervisor's output if not.
#define START_SANDBOX(sb)                                                    \
  do {                                                                       \
    if (!(sb).wait_ready()) {                                                \
      auto r = (sb).stop();                                                  \
      FAIL() << "agent never answered; supervisor said: " << r.err << r.out; \
    }                                                                        \
  } while (0)

TEST_F(ProcessSandboxTest, DocgenMakesAllFourDocuments) {
  ProcessSandbox sb;
  START_SANDBOX(sb);
  auto c = sb.connect();
  ASSERT_TRUE(c.ok());
  for (const char* fmt : {"docx", "pptx", "xlsx", "pdf"}) {
    std::string out;
    auto r = sb.sh(std::string("docgen --spec /usr/local/lib/docgen/examples/report.json --out "
                               "/work/r.") +
                       fmt,
                   &out);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_TRUE(r->exited && r->exit_code == 0) << fmt << ": " << out;
    auto doc = c->get_file(std::string("r.") + fmt);
    ASSERT_TRUE(doc.ok()) << fmt << ": " << doc.error().describe();
    const std::string magic = std::string(fmt) == "pdf" ? "%PDF" : std::string("PK\x03\x04", 4);
    EXPECT_EQ(doc->substr(0, magic.size()), magic) << fmt;
    EXPECT_GT(doc->size(), 1000u) << fmt;
  }
}

TEST_F(ProcessSandboxTest, HostFilesAndProcessesAreInvisible) {
  const std::string marker = "carapace-process-marker-" + std::to_string(getpid());
  std::ofstream("/tmp/" + marker) << "host secret";
  std::ofstream("/root/" + marker) << "host secret";
  ProcessSandbox sb;
  START_SANDBOX(sb);
  std::string out;
  auto r = sb.sh("ls -a /tmp /root 2>&1; cat /tmp/" + marker + " /root/" + marker +
                     " 2>&1; echo pids: $(ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' '); "
                     "echo agent: $(cat /proc/2/comm); id -u; "
                     // The agent's socket directory is out of the workload's reach.
                     "ls /run/carapace >/dev/null 2>&1 || echo run-carapace-closed",
                 &out);
  ::unlink(("/tmp/" + marker).c_str());
  ::unlink(("/root/" + marker).c_str());
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(out.find("host secret"), std::string::npos) << out;
  EXPECT_EQ(out.find(marker + "\n"), std::string::npos) << out;
  EXPECT_NE(out.find("agent: carapace-agent"), std::string::npos) << out;
  // Only the sandbox's own processes: init, the agent, the shell and its children.
  std::istringstream pids(out.substr(out.find("pids:") + 5));
  int n = 0, pid = 0;
  while (pids >> pid) {
    ++n;
    EXPECT_LT(pid, 100) << out;
  }
  EXPECT_GE(n, 2);
  EXPECT_LT(n, 10) << out;
  EXPECT_NE(out.find("\n1000\n"), std::string::npos) << "not uid 1000 inside: " << out;
  EXPECT_NE(out.find("run-carapace-closed"), std::string::npos) << out;
  // The supervisor's own host pid is nowhere in the sandbox's /proc.
  EXPECT_EQ(out.find(" " + std::to_string(sb.process().pid()) + " "), std::string::npos);
}

// PID 1 is a clone of the supervisor: without its own command line it would show the
// supervisor's (host binary, paths of the socket, token file and jail base, host uid, limits).
TEST_F(ProcessSandboxTest, NoProcessShowsHostPathsOrIds) {
  const std::string uid = "231237";
  ProcessSandbox sb({"--uid", uid, "--mem-limit", "256", "--pids-max", "300"});
  START_SANDBOX(sb);
  std::string out;
  auto r = sb.sh(kProcScanScript, &out);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  expect_no_host_strings(out, {CARAPACE_BINARY, CARAPACE_AGENT, process_rootfs(), sb.sock(),
                               "/tmp/carapace-process-test-", ProcessSandbox::kBase, uid});
}

TEST_F(ProcessSandboxTest, NoNetworkWithoutAPolicy) {
  // A host listener on 127.0.0.1: the sandbox's loopback is its own, so this is unreachable.
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(ls, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(ls, 4), 0);
  socklen_t len = sizeof a;
  getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  ProcessSandbox sb;
  START_SANDBOX(sb);
  std::string out;
  auto r = sb.sh(
      "python3 - <<'EOF'\n"
      "import socket\n"
      "for host in ('127.0.0.1', '1.1.1.1', '10.0.2.2'):\n"
      "    s = socket.socket(); s.settimeout(3)\n"
      "    try:\n"
      "        s.connect((host, " +
          std::to_string(port) +
          "))\n"
          "        print('CONNECTED', host)\n"
          "    except OSError as e:\n"
          "        print('refused', host, e.errno)\n"
          "print('ifaces', sorted(l.split(':')[0].strip() for l in open('/proc/net/dev')"
          ".readlines()[2:]))\n"
          "EOF",
      &out);
  close(ls);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(out.find("CONNECTED"), std::string::npos) << out;
  EXPECT_NE(out.find("refused 127.0.0.1"), std::string::npos) << out;
  EXPECT_NE(out.find("ifaces ['lo']"), std::string::npos) << out;
}

TEST_F(ProcessSandboxTest, PtraceMountAndNamespacesFailWithEperm) {
  ProcessSandbox sb;
  START_SANDBOX(sb);
  std::string out;
  auto r = sb.sh(
      "python3 - <<'EOF'\n"
      "import ctypes\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "def call(name, *args):\n"
      "    rc = getattr(libc, name)(*args)\n"
      "    print(name, rc, ctypes.get_errno())\n"
      "call('ptrace', 16, 2, 0, 0)\n"  // PTRACE_ATTACH to the agent
      "call('ptrace', 0, 0, 0, 0)\n"   // PTRACE_TRACEME
      "call('mount', b'none', b'/tmp', b'tmpfs', 0, None)\n"
      "call('umount2', b'/proc', 2)\n"
      "call('unshare', 0x10000000)\n"  // CLONE_NEWUSER
      "call('chroot', b'/tmp')\n"
      "print(open('/proc/self/status').read().split('Seccomp:')[1].split()[0])\n"
      "EOF",
      &out);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  for (const char* line :
       {"ptrace -1 1\nptrace -1 1", "mount -1 1", "umount2 -1 1", "unshare -1 1", "chroot -1 1"})
    EXPECT_NE(out.find(line), std::string::npos) << line << " in:\n" << out;
  EXPECT_NE(out.find("\n2\n"), std::string::npos) << "not under a seccomp filter: " << out;
}

// docs/security.md #30: at the memory-cgroup limit only the workload dies; out of fds only the
// workload fails; the agent answers on, the host is untouched.
TEST_F(ProcessSandboxTest, MemoryLimitKillsOnlyTheWorkloadSecurityChecks30) {
  ProcessSandbox sb({"--mem-limit", "64"});
  START_SANDBOX(sb);
  std::string out;
  auto r = sb.sh("exec python3 -c \"b = b'x' * (300 << 20); print('ALLOCATED', len(b))\"", &out);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_FALSE(r->exited) << "exited " << r->exit_code << ": " << out;
  EXPECT_EQ(r->signal, SIGKILL) << out;
  EXPECT_EQ(out.find("ALLOCATED"), std::string::npos);
  std::string fds;
  auto f =
      sb.sh("python3 -c \"import os; [os.open('/dev/null', 0) for _ in range(100000)]\"", &fds);
  ASSERT_TRUE(f.ok()) << f.error().describe();
  EXPECT_TRUE(f->exited && f->exit_code != 0) << fds;
  EXPECT_NE(fds.find("Too many open files"), std::string::npos) << fds;
  auto c = sb.connect();
  ASSERT_TRUE(c.ok());
  auto p = c->ping();
  ASSERT_TRUE(p.ok()) << "agent died with the workload: " << p.error().describe();
  EXPECT_TRUE(p->token_set);
  auto res = sb.stop();
  EXPECT_EQ(sb.leftovers(), "");
}

// docs/security.md #30: the agent SIGKILLed (or OOM-killed) ends the sandbox; the supervisor
// removes the jail folder, cgroups and socket link.
TEST_F(ProcessSandboxTest, AgentKilledLeavesNothingSecurityChecks30) {
  ProcessSandbox sb;
  START_SANDBOX(sb);
  ASSERT_NE(sandbox_cgroup_dirs(sb.id()).size(), 0u);
  // The agent's host pid, from the sandbox's cgroup.
  const pid_t agent = agent_pid_in(sandbox_cgroup_dirs(sb.id()));
  ASSERT_GT(agent, 0);
  ASSERT_EQ(kill(agent, SIGKILL), 0);
  auto res = sb.wait_end(std::chrono::seconds(20));
  EXPECT_FALSE(res.timed_out);
  EXPECT_EQ(res.exit_code, 128 + SIGKILL) << res.err;
  EXPECT_EQ(sb.leftovers(), "");
}

// docs/security.md #30: a SIGKILLed supervisor takes its sandbox with it (parent-death signal); the
// leftovers (folder, empty cgroups) are removed by the next start with the same id.
TEST_F(ProcessSandboxTest, SupervisorKilledLeftoversAreRemovedSecurityChecks30) {
  std::string id = "pt-" + std::to_string(getpid()) + "-killed";
  {
    ProcessSandbox sb({}, id);
    START_SANDBOX(sb);
    ASSERT_EQ(kill(sb.process().pid(), SIGKILL), 0);
    sb.wait_end(std::chrono::seconds(10));
    // The agent went with it: nothing answers any more.
    bool answered = true;
    for (int i = 0; i < 100 && answered; ++i) {
      auto c = sb.connect();
      answered = c.ok() && c->ping().ok();
      if (answered) usleep(20000);
    }
    EXPECT_FALSE(answered);
    ::unlink(sb.sock().c_str());
  }
  ProcessSandbox again({}, id);
  START_SANDBOX(again);
  auto res = again.stop();
  EXPECT_NE(res.err.find("removing leftovers"), std::string::npos) << res.err;
  EXPECT_EQ(again.leftovers(), "");
}

// The sandbox's init is a fork of the supervisor and inherits its lock on the jail folder: right
// after the supervisor's SIGKILL the folder can still be locked by a jail process that is about to
// die. A caller that reaped the supervisor removes the leftovers anyway (the lock holder dies with
// the cgroups); a caller that only found the folder leaves a locked one alone.
TEST_F(ProcessSandboxTest, LeftoversGoWhileAJailProcessStillHoldsTheLockSecurityChecks30) {
  const std::string base = "/tmp/carapace-leftover-" + std::to_string(getpid());
  const std::string id = "lock-holder";
  const std::string cgroup_id = "leftover-test-" + std::to_string(getpid());
  ASSERT_EQ(::mkdir(base.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((base + "/" + id).c_str(), 0700), 0);
  auto mounts = detect_cgroup_mounts();
  ASSERT_TRUE(mounts.ok()) << mounts.error().describe();
  auto cgroups = JailCgroups::plan(*mounts, CgroupVersion::kAuto, {}, cgroup_id);
  ASSERT_TRUE(cgroups.ok()) << cgroups.error().describe();
  ASSERT_TRUE(cgroups->create().ok());
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t holder = ::fork();
  if (holder == 0) {
    const int fd = ::open((base + "/" + id).c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(1);
    (void)!::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  ASSERT_TRUE(cgroups->add_process(holder, false).ok());

  EXPECT_TRUE(remove_jail_leftovers(base, id, cgroup_id, JailLeftovers::kIfUnlocked).ok());
  EXPECT_TRUE(path_exists(base + "/" + id)) << "a locked jail folder was removed";
  EXPECT_EQ(::kill(holder, 0), 0) << "the lock holder was killed";

  EXPECT_TRUE(remove_jail_leftovers(base, id, cgroup_id, JailLeftovers::kSupervisorGone).ok());
  int status = 0;
  ASSERT_EQ(::waitpid(holder, &status, 0), holder);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  EXPECT_FALSE(path_exists(base + "/" + id));
  for (const std::string& d : cgroups->paths())
    EXPECT_FALSE(path_exists(d)) << "cgroup left behind: " << d;
  ::rmdir(base.c_str());
  // Never a path to another cgroup.
  EXPECT_FALSE(remove_stale_cgroups("../" + cgroup_id).ok());
  EXPECT_FALSE(remove_stale_cgroups("..").ok());
  EXPECT_FALSE(remove_stale_cgroups("").ok());
}

// docs/security.md #28: paths from the host through the agent: `..`, symlinks, /proc, FIFOs.
TEST_F(ProcessSandboxTest, PathChecksHoldSecurityChecks28) {
  ProcessSandbox sb;
  START_SANDBOX(sb);
  std::string out;
  auto r = sb.sh(
      "ln -s /etc/passwd /work/link && ln -s /etc /work/dirlink && mkfifo /work/fifo"
      " && echo ok",
      &out);
  ASSERT_TRUE(r.ok() && r->exit_code == 0) << out;
  auto c = sb.connect();
  ASSERT_TRUE(c.ok());
  c->set_io_timeout_ms(10000);
  for (const char* bad : {"../etc/passwd", "/etc/passwd", "link", "dirlink/passwd", "fifo",
                          "/proc/self/environ", "../proc/1/environ"}) {
    auto got = c->get_file(bad);
    EXPECT_FALSE(got.ok()) << "get_file " << bad << " was allowed";
  }
  for (const char* bad : {"../x", "dirlink/x", "/proc/x", "/tmp/x"}) {
    Status put = c->put_file(bad, "data");
    EXPECT_FALSE(put.ok()) << "put_file " << bad << " was allowed";
  }
  // A write through a link to a writable file outside /work: refused, or the link itself is
  // replaced; the target never changes.
  out.clear();
  ASSERT_TRUE(sb.sh("echo target > /tmp/target && ln -s /tmp/target /work/tlink", &out).ok());
  (void)c->put_file("tlink", "data");
  out.clear();
  ASSERT_TRUE(sb.sh("cat /tmp/target", &out).ok());
  EXPECT_EQ(out, "target\n");
  EXPECT_TRUE(c->put_file("fine.txt", "data").ok());
  auto back = c->get_file("fine.txt");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "data");
}

TEST_F(ProcessSandboxTest, BadInputIsRefusedBeforeAnythingIsCreated) {
  ProcessSandbox egress({"--allow-egress", "0.0.0.0/0:tcp:443"});
  auto r = egress.wait_end(std::chrono::seconds(10));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not supported by the process backend yet"), std::string::npos) << r.err;
  EXPECT_EQ(egress.leftovers(), "");
  auto missing = run_process({CARAPACE_BINARY, "run", "--isolation", "process", "--rootfs",
                              "/nonexistent.ext4", "--agent-sock", "/tmp/x.sock"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  auto help = run_process({CARAPACE_BINARY, "run", "--isolation", "process", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("WEAKER THAN A MICROVM"), std::string::npos);
}

// `--mount` (docs/api.md, Mounts): the folder is the owner's inside and what the sandbox makes is
// the owner's on the host; a host path that is no folder, a guest path through a symlink of the
// image, and rw-nodelete's refusals each end the start (status 2) or the operation as documented.
TEST_F(ProcessSandboxTest, MountFlagSharesAFolderAsItsOwner) {
  const std::string share = "/tmp/carapace-process-share-" + std::to_string(getpid());
  ASSERT_EQ(::mkdir(share.c_str(), 0750), 0);
  ASSERT_EQ(::chown(share.c_str(), 4242, 4243), 0);
  {
    ProcessSandbox sb({"--mount", "host=" + share + ",guest=/work/src,mode=rw", "--mount",
                       "host=" + share + ",guest=/mnt/keep,mode=rw-nodelete"});
    START_SANDBOX(sb);
    std::string out;
    auto r = sb.sh(
        "stat -c %u:%g /work/src; echo hi > /work/src/made && echo made; rm /mnt/keep/made "
        "2>&1 | grep -c 'Permission denied'; grep -c ' /work/src .*idmapped' /proc/self/mountinfo",
        &out);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(out, "1000:1000\nmade\n1\n1\n");
    struct stat st {};
    ASSERT_EQ(::stat((share + "/made").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 4242u);
    EXPECT_EQ(st.st_gid, 4243u);
    sb.stop();
    EXPECT_EQ(sb.leftovers(), "");
  }
  for (const auto& [flag, reason] : std::vector<std::pair<std::string, std::string>>{
           {"host=/etc/passwd,guest=/work/x", "--mount host=/etc/passwd: "},
           {"host=" + share + ",guest=/var/run/x", "/var/run is a symlink or not a folder"},
           {"host=" + share + ",guest=/proc/x", "/proc or beneath"}}) {
    ProcessSandbox bad({"--mount", flag});
    auto r = bad.wait_end(std::chrono::seconds(10));
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.err;
    EXPECT_NE(r.err.find(reason), std::string::npos) << flag << ": " << r.err;
    EXPECT_EQ(bad.leftovers(), "");
  }
  ::unlink((share + "/made").c_str());
  ::rmdir(share.c_str());
}

}  // namespace
}  // namespace carapace::testing
