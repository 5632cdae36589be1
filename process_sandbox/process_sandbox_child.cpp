#include "process_sandbox/process_sandbox_child.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/loop.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "common/base/loopback.h"
#include "common/base/unique_fd.h"
#include "jailer/jail_fs.h"
#include "jailer/supervisor.h"
#include "process_sandbox/init_title.h"
#include "process_sandbox/nodelete_landlock.h"
#include "process_sandbox/workload_seccomp.h"

namespace carapace {
namespace {

constexpr char kAgentPath[] = "/usr/sbin/carapace-agent";
constexpr char kAgentSockInside[] = "/run/carapace/agent.sock";
constexpr int kTokenFd = 3;
constexpr int kListenFd = 4;

Status do_mount(const std::string& src, const std::string& dst, const char* type,
                unsigned long flags, const std::string& data = {}) {
  if (::mount(src.empty() ? nullptr : src.c_str(), dst.c_str(), type, flags,
              data.empty() ? nullptr : data.c_str()) != 0)
    return sys_error("mount " + (src.empty() ? std::string(type ? type : "") : src) + " on " + dst);
  return ok_status();
}

std::string tmpfs_opts(const char* mode, uint64_t mib) {
  return std::string("mode=") + mode + ",size=" + std::to_string(mib) + "m";
}

struct LoopDevice {
  std::string path;
  UniqueFd fd;  // held until the mount holds the device: AUTOCLEAR acts on the last close
};

// A free loop device bound read-only to the image. LO_FLAGS_AUTOCLEAR: it detaches itself when
// the last user goes, i.e. when this mount namespace dies; nothing to remove afterwards.
Result<LoopDevice> attach_loop(const std::string& image) {
  UniqueFd img(::open(image.c_str(), O_RDONLY | O_CLOEXEC));
  if (!img.valid()) return sys_error("open " + image);
  UniqueFd ctl(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!ctl.valid()) return sys_error("open /dev/loop-control");
  // Another process may take the device between GET_FREE and CONFIGURE (EBUSY): try again.
  for (int attempt = 0; attempt < 16; ++attempt) {
    int n = ::ioctl(ctl.get(), LOOP_CTL_GET_FREE);
    if (n < 0) return sys_error("LOOP_CTL_GET_FREE");
    const std::string dev = "/dev/loop" + std::to_string(n);
    UniqueFd loop(::open(dev.c_str(), O_RDONLY | O_CLOEXEC));
    if (!loop.valid()) return sys_error("open " + dev);
    loop_config lc{};
    lc.fd = static_cast<uint32_t>(img.get());
    lc.info.lo_flags = LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR;
    if (::ioctl(loop.get(), LOOP_CONFIGURE, &lc) == 0) return LoopDevice{dev, std::move(loop)};
    if (errno != EBUSY) return sys_error("LOOP_CONFIGURE " + dev);
  }
  return make_error("no free loop device for " + image);
}

Status make_node(const std::string& dev_dir, const char* name, unsigned maj, unsigned min) {
  const std::string path = dev_dir + "/" + name;
  if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(maj, min)) != 0)
    return sys_error("mknod " + path);
  return ok_status();
}

// /dev: a small tmpfs with the harmless character devices only, /dev/shm, and the fd links.
Status build_dev(const std::string& root, const ProcessSandboxConfig& cfg) {
  const std::string dev = root + "/dev";
  TRY_STATUS(make_dirs(dev, 0755));
  TRY_STATUS(do_mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=64k"));
  TRY_STATUS(make_node(dev, "null", 1, 3));
  TRY_STATUS(make_node(dev, "zero", 1, 5));
  TRY_STATUS(make_node(dev, "full", 1, 7));
  TRY_STATUS(make_node(dev, "random", 1, 8));
  TRY_STATUS(make_node(dev, "urandom", 1, 9));
  TRY_STATUS(make_node(dev, "tty", 5, 0));
  for (auto [name, target] : {std::pair{"fd", "/proc/self/fd"},
                              {"stdin", "/proc/self/fd/0"},
                              {"stdout", "/proc/self/fd/1"},
                              {"stderr", "/proc/self/fd/2"}}) {
    if (::symlink(target, (dev + "/" + name).c_str()) != 0) return sys_error("symlink /dev/fd");
  }
  TRY_STATUS(make_dirs(dev + "/shm", 0755));
  return do_mount("tmpfs", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV,
                  tmpfs_opts("1777", cfg.tmp_mib));
}

// The sandbox's root, built as real root in this mount namespace, then pivoted into:
//   <jail>/root            tmpfs (staging; gone from view after pivot_root)
//     lower/               the image, loop, read-only
//     rw/{upper,work}      tmpfs: everything the sandbox writes to its root
//     new/                 overlayfs of the two: the new /
Status build_root(const ProcessChildPlan& plan) {
  const ProcessSandboxConfig& cfg = *plan.cfg;
  const std::string stage = cfg.jail_dir() + "/root";
  TRY_STATUS(do_mount("", "/", nullptr, MS_REC | MS_PRIVATE));
  TRY_STATUS(do_mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=700,size=64k"));
  for (const char* d : {"/lower", "/rw", "/new"})
    if (::mkdir((stage + d).c_str(), 0755) != 0) return sys_error("mkdir " + stage + d);
  {
    LoopDevice loop = TRY(attach_loop(cfg.rootfs));
    // noload: a read-only mount must not replay the journal.
    TRY_STATUS(
        do_mount(loop.path, stage + "/lower", "ext4", MS_RDONLY | MS_NOSUID | MS_NODEV, "noload"));
  }
  TRY_STATUS(do_mount("tmpfs", stage + "/rw", "tmpfs", MS_NOSUID | MS_NODEV,
                      tmpfs_opts("755", cfg.tmp_mib)));
  for (const char* d : {"/rw/upper", "/rw/work"})
    if (::mkdir((stage + d).c_str(), 0755) != 0) return sys_error("mkdir " + stage + d);
  const std::string root = stage + "/new";
  // Layer paths relative to the staging folder: /proc/self/mountinfo shows the options as given,
  // and absolute ones would name the host's jail folder (the daemon's state folder) inside.
  if (::chdir(stage.c_str()) != 0) return sys_error("chdir " + stage);
  TRY_STATUS(do_mount("overlay", root, "overlay", MS_NOSUID | MS_NODEV,
                      "lowerdir=lower,upperdir=rw/upper,workdir=rw/work"));

  // /proc of the new PID namespace only: host processes are not there.
  TRY_STATUS(make_dirs(root + "/proc", 0555));
  TRY_STATUS(do_mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC));
  TRY_STATUS(build_dev(root, cfg));
  TRY_STATUS(make_dirs(root + "/tmp", 01777));
  TRY_STATUS(do_mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
                      tmpfs_opts("1777", cfg.tmp_mib)));
  // /run: private tmpfs; /run/carapace is the host's <jail>/run (the agent's socket).
  TRY_STATUS(make_dirs(root + "/run", 0755));
  TRY_STATUS(do_mount("tmpfs", root + "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=1m"));
  TRY_STATUS(make_dirs(root + "/run/carapace", 0755));
  TRY_STATUS(do_mount(cfg.jail_dir() + "/run", root + "/run/carapace", nullptr, MS_BIND));
  TRY_STATUS(do_mount("", root + "/run/carapace", nullptr,
                      MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC));
  // The egress folder, read-only: connecting to a socket needs no write access to its folder.
  TRY_STATUS(make_dirs(root + kEgressDirInside, 0755));
  TRY_STATUS(do_mount(cfg.egress_dir(), root + kEgressDirInside, nullptr, MS_BIND));
  TRY_STATUS(do_mount("", root + kEgressDirInside, nullptr,
                      MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC));
  // /sys is left empty: it would show the host's devices.
  if (!cfg.agent_exe.empty()) {
    TRY_STATUS(do_mount(cfg.agent_exe, root + kAgentPath, nullptr, MS_BIND));
    TRY_STATUS(do_mount("", root + kAgentPath, nullptr,
                        MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV));
  }
  // /work: the agent's sandbox root, owned by the sandbox's uid (a copy-up in the overlay).
  TRY_STATUS(make_dirs(root + "/work", 0755));
  if (::chown((root + "/work").c_str(), plan.host_uid, plan.host_gid) != 0)
    return sys_error("chown /work");
  // The workspace mounts last: a guest path beneath /work or /tmp lands on what is there now.
  if (plan.shares) TRY_STATUS(attach_shares(root, *plan.shares));

  if (::chdir(root.c_str()) != 0) return sys_error("chdir " + root);
  if (::syscall(SYS_pivot_root, ".", ".") != 0) return sys_error("pivot_root");
  if (::umount2(".", MNT_DETACH) != 0) return sys_error("umount old root");
  if (::chdir("/") != 0) return sys_error("chdir /");
  return ok_status();
}

// The new network namespace has only `lo`, down: bring it up (no other interface exists, so
// nothing leaves the sandbox).
Status loopback_up() {
  TRY_STATUS(bring_up_loopback());
  // Every port of this namespace's loopback is the sandbox's own (nothing else listens in it), so
  // its unprivileged uid may bind the low ones too: the agent's stub resolver on 53 and its
  // transparent-egress captures on 80 and 443 (guest/agent/egress_forwarder.h). A per-namespace
  // setting (net.ipv4.ip_unprivileged_port_start): the host's own ports are not touched.
  UniqueFd knob(::open("/proc/sys/net/ipv4/ip_unprivileged_port_start", O_WRONLY | O_CLOEXEC));
  if (!knob.valid() || ::write(knob.get(), "0\n", 2) != 2)
    return sys_error("net.ipv4.ip_unprivileged_port_start");
  return ok_status();
}

Status send_msg(int fd, const std::string& msg) {
  if (::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(msg.size()))
    return sys_error("control socket send");
  return ok_status();
}

Status expect_msg(int fd, char what) {
  char c = 0;
  ssize_t n;
  do {
    n = ::recv(fd, &c, 1, 0);
  } while (n < 0 && errno == EINTR);
  if (n != 1 || c != what) return make_error("supervisor went away");
  return ok_status();
}

// Into a new user namespace (the supervisor writes its maps), then down to the sandbox's uid
// inside it with no capabilities at all.
Status enter_user_ns(const ProcessChildPlan& plan) {
  if (::unshare(CLONE_NEWUSER) != 0) return sys_error("unshare(CLONE_NEWUSER)");
  TRY_STATUS(send_msg(plan.ctl_fd, std::string(1, kMsgUserNs)));
  TRY_STATUS(expect_msg(plan.ctl_fd, kMsgMapped));
  // The bounding set first (needs CAP_SETPCAP, which goes with the uid change below).
  for (int cap = 0; cap <= 63; ++cap)
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
      return sys_error("PR_CAPBSET_DROP");
  if (::setgroups(0, nullptr) != 0) return sys_error("setgroups");
  if (::setresgid(kSandboxInnerId, kSandboxInnerId, kSandboxInnerId) != 0)
    return sys_error("setresgid");
  if (::setresuid(kSandboxInnerId, kSandboxInnerId, kSandboxInnerId) != 0)
    return sys_error("setresuid");
  // Host root is not mapped in this namespace, so the kernel's "leaving uid 0" rule does not
  // clear the capabilities: clear every set explicitly.
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capset, &hdr, data) != 0) return sys_error("capset");
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return sys_error("PR_CAP_AMBIENT_CLEAR_ALL");
  return ok_status();
}

Status apply_rlimits(const ProcessSandboxConfig& cfg) {
  rlimit nofile{cfg.nofile, cfg.nofile};
  if (::setrlimit(RLIMIT_NOFILE, &nofile) != 0) return sys_error("setrlimit RLIMIT_NOFILE");
  rlimit core{0, 0};
  if (::setrlimit(RLIMIT_CORE, &core) != 0) return sys_error("setrlimit RLIMIT_CORE");
  return ok_status();
}

// Moves `fd` (a number above both targets) to exactly `target`, not close-on-exec.
Status place_fd(int fd, int target) {
  if (::dup2(fd, target) != target) return sys_error("dup2");
  ::close(fd);
  return ok_status();
}

// PID 2: the agent. Listening socket on fd 4, token on fd 3 (a pipe), the rw-nodelete ruleset
// (-1: none) applied, workload filter on, fresh environment.
// `mount_points`: the workspace mounts' guest paths, which the agent's file requests may enter.
[[noreturn]] void exec_agent(int listen_fd, int token_fd, int err_fd, int ruleset,
                             const std::vector<std::string>& mount_points) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Landlock first, while the ruleset's descriptor is surely still the one it was.
  Status s = ruleset >= 0 ? restrict_self_to(ruleset) : ok_status();
  // Both through high numbers first: either source may sit on the other's target.
  int lhigh = ::fcntl(listen_fd, F_DUPFD_CLOEXEC, 64);
  int thigh = token_fd >= 0 ? ::fcntl(token_fd, F_DUPFD_CLOEXEC, 64) : -1;
  if (s.ok() && (lhigh < 0 || (token_fd >= 0 && thigh < 0))) s = sys_error("dup");
  if (s.ok()) s = place_fd(lhigh, kListenFd);
  if (s.ok() && thigh >= 0) s = place_fd(thigh, kTokenFd);
  if (s.ok()) {
    ::close_range(kListenFd + 1, ~0U, CLOSE_RANGE_CLOEXEC);
    s = install_workload_seccomp();
  }
  if (s.ok()) {
    std::vector<const char*> argv = {"carapace-agent", "--listen", "fd:4", "--root", "/work"};
    if (token_fd >= 0) argv.insert(argv.end(), {"--token-fd", "3"});
    for (const std::string& m : mount_points)
      argv.insert(argv.end(), {"--mount-point", m.c_str()});
    argv.push_back(nullptr);
    const char* envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=/work",
                          "LANG=C.UTF-8", nullptr};
    ::execve(kAgentPath, const_cast<char* const*>(argv.data()), const_cast<char* const*>(envp));
    s = sys_error(std::string("execve ") + kAgentPath);
  }
  std::string msg = s.error().describe();
  (void)!::write(err_fd, msg.data(), msg.size());
  ::_exit(127);
}

// The agent's socket, bound here as real root in a directory only root can write (the host's
// <jail>/run): the sandbox's uid can neither replace it with its own socket nor with a symlink
// that would point the host's connect() at a host socket. The agent gets the listening fd.
Result<UniqueFd> bind_agent_socket() {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, kAgentSockInside, sizeof kAgentSockInside);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error("agent socket");
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return sys_error(std::string("bind ") + kAgentSockInside);
  if (::chmod(kAgentSockInside, 0600) != 0) return sys_error("chmod agent socket");
  if (::listen(fd.get(), 64) != 0) return sys_error("listen on the agent socket");
  return fd;
}

// Starts the agent; returns its pid once it has exec'd.
Result<pid_t> start_agent(const ProcessChildPlan& plan, int listen_fd, int ruleset) {
  int token_pipe[2] = {-1, -1};
  UniqueFd token_r, token_w;
  if (!plan.token.empty()) {
    if (::pipe2(token_pipe, O_CLOEXEC) != 0) return sys_error("pipe");
    token_r = UniqueFd(token_pipe[0]);
    token_w = UniqueFd(token_pipe[1]);
    // The token is small: it fits the pipe's buffer before the agent reads it.
    if (::write(token_w.get(), plan.token.data(), plan.token.size()) !=
        static_cast<ssize_t>(plan.token.size()))
      return sys_error("write token pipe");
    token_w.reset();
  }
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return sys_error("pipe");
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);
  std::vector<std::string> mount_points;
  if (plan.shares)
    for (const PreparedShare& share : *plan.shares)
      mount_points.push_back(share.spec.guest);
  pid_t pid = ::fork();
  if (pid < 0) return sys_error("fork agent");
  if (pid == 0)
    exec_agent(listen_fd, token_r.valid() ? token_r.get() : -1, err_w.get(), ruleset, mount_points);
  err_w.reset();
  token_r.reset();
  const std::string err = read_until_eof(err_r.get());
  if (!err.empty()) return make_error(err);
  return pid;
}

// PID 1 stays as the reaper: it exits with the agent's status, which ends every process of the
// namespace.
[[noreturn]] void reap_until_agent_exits(pid_t agent) {
  for (;;) {
    int status = 0;
    pid_t p = ::waitpid(-1, &status, 0);
    if (p < 0 && errno == EINTR) continue;
    if (p < 0) ::_exit(1);
    if (p != agent) continue;
    if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
    ::_exit(128 + WTERMSIG(status));
  }
}

Status setup(const ProcessChildPlan& plan) {
  const ProcessSandboxConfig& cfg = *plan.cfg;
  // First: the workload must not read the supervisor's command line and environment as PID 1's.
  TRY_STATUS(become_anonymous_init());
  ::umask(0);
  TRY_STATUS(build_root(plan));
  // Made as real root in the finished tree (the paths are the sandbox's now), applied to the agent.
  UniqueFd ruleset;
  std::vector<std::string> nodelete;
  if (plan.shares)
    for (const PreparedShare& share : *plan.shares)
      if (share.spec.mode == ShareMode::kRwNoDelete) nodelete.push_back(share.spec.guest);
  if (!nodelete.empty()) ruleset = TRY(nodelete_ruleset(nodelete));
  TRY_STATUS(loopback_up());
  UniqueFd listener = TRY(bind_agent_socket());
  if (::sethostname(cfg.id.data(), cfg.id.size()) != 0) return sys_error("sethostname");
  TRY_STATUS(apply_rlimits(cfg));
  // Nothing unprivileged runs before the supervisor has placed us in the cgroups.
  TRY_STATUS(expect_msg(plan.ctl_fd, kMsgPlaced));
  // No controlling terminal to inject input into; stdin from /dev/null.
  ::setsid();
  UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null.valid() || ::dup2(null.get(), 0) != 0) return sys_error("stdin on /dev/null");
  TRY_STATUS(enter_user_ns(plan));
  // The credential change reset the parent-death signal; set it again, then make sure the
  // supervisor did not die in between.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return sys_error("PR_SET_PDEATHSIG");
  pollfd pfd{plan.ctl_fd, POLLIN, 0};
  if (::poll(&pfd, 1, 0) != 0) return make_error("supervisor went away");
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return sys_error("PR_SET_DUMPABLE");
  ::umask(022);
  pid_t agent = TRY(start_agent(plan, listener.get(), ruleset.valid() ? ruleset.get() : -1));
  listener.reset();
  TRY_STATUS(send_msg(plan.ctl_fd, std::string(1, kMsgRunning)));
  ::close(plan.ctl_fd);
  reap_until_agent_exits(agent);
}

}  // namespace

void process_sandbox_child_main(const ProcessChildPlan& plan) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  Status s = setup(plan);
  // Bad input (a guest path through a link of the image) stays bad input for the supervisor's
  // exit status, and so for the daemon's answer.
  const char kind = s.error().kind == ErrorKind::kInvalidInput ? kMsgRefused : kMsgError;
  std::string msg = std::string(1, kind) + s.error().describe();
  (void)!::send(plan.ctl_fd, msg.data(), msg.size(), MSG_NOSIGNAL);
  ::_exit(1);
}

}  // namespace carapace
