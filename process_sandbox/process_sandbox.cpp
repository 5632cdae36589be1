#include "process_sandbox/process_sandbox.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/base/unique_fd.h"
#include "jailer/cgroup.h"
#include "jailer/supervisor.h"
#include "process_sandbox/nodelete_landlock.h"
#include "process_sandbox/process_sandbox_child.h"
#include "process_sandbox/share_mounts.h"

namespace carapace {
namespace {

constexpr int kExitHost = 1;
constexpr int kExitBadInput = 2;
constexpr char kWho[] = "carapace run --isolation process";
constexpr size_t kMaxTokenChars = 128;

int fail(const Error& e) {
  fprintf(stderr, "%s: error: %s\n", kWho, e.describe().c_str());
  return e.kind == ErrorKind::kInvalidInput ? kExitBadInput : kExitHost;
}

Error bad(std::string msg) {
  return as_invalid_input(make_error(std::move(msg)));
}

Status check_file(const std::string& flag, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return bad(flag + ": " + path + ": " + strerror(errno));
  if (!S_ISREG(st.st_mode)) return bad(flag + ": " + path + " is not a regular file");
  return ok_status();
}

// The token file: 1..128 hex digits (a trailing newline is allowed), not readable by others.
Result<std::string> read_token(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return bad("--token-file: " + path + ": " + strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return bad("--token-file: " + path + " is not a regular file");
  if ((st.st_mode & 0077) != 0)
    return bad("--token-file: " + path + " is readable by others (mode must be 0600 or tighter)");
  char buf[kMaxTokenChars + 3];
  ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n < 0) return sys_error("read " + path);
  std::string t(buf, static_cast<size_t>(n));
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r'))
    t.pop_back();
  bool hex = !t.empty() && t.size() <= kMaxTokenChars;
  for (char c : t)
    hex = hex && std::isxdigit(static_cast<unsigned char>(c));
  if (!hex) return bad("--token-file: expected 1..128 hex digits in " + path);
  return t;
}

Status write_file(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return sys_error("open " + path);
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return sys_error("write " + path);
  return ok_status();
}

// The child's user namespace: only the sandbox's uid and gid, as kSandboxInnerId inside.
Status write_id_maps(pid_t pid, uid_t uid, gid_t gid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  const std::string inner = std::to_string(kSandboxInnerId) + " ";
  TRY_STATUS(write_file(proc + "/uid_map", inner + std::to_string(uid) + " 1\n"));
  return write_file(proc + "/gid_map", inner + std::to_string(gid) + " 1\n");
}

// One message from the child; "" when it closed the socket.
std::string recv_msg(int fd) {
  char buf[1024];
  ssize_t n;
  do {
    n = ::recv(fd, buf, sizeof buf, 0);
  } while (n < 0 && errno == EINTR);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// Drives the child through its setup: cgroups placed → id maps → agent running. Returns the
// child's error line (or the supervisor's) on failure.
Status handshake(JailFolder& jail, pid_t pid, int ctl, uid_t uid, gid_t gid) {
  TRY_STATUS(jail.cgroups().add_process(pid, true));
  // A child that failed early already said why; its message beats "went away".
  bool sent = ::send(ctl, &kMsgPlaced, 1, MSG_NOSIGNAL) == 1;
  for (;;) {
    std::string m = recv_msg(ctl);
    if (m.empty())
      return make_error(sent ? "sandbox child ended during setup" : "sandbox child went away");
    if (m[0] == kMsgError) return make_error(m.substr(1));
    if (m[0] == kMsgRefused) return as_invalid_input(make_error(m.substr(1)));
    if (m[0] == kMsgRunning) return ok_status();
    if (m[0] != kMsgUserNs) return make_error("sandbox child: unexpected message");
    TRY_STATUS(write_id_maps(pid, uid, gid));
    if (::send(ctl, &kMsgMapped, 1, MSG_NOSIGNAL) != 1)
      return make_error("sandbox child went away");
  }
}

// --agent-sock: a symlink to the socket in <jail>/run (connect() follows it). Removed at the end
// only while it still points there.
class AgentSockLink {
 public:
  AgentSockLink(std::string link, std::string target)
      : link_(std::move(link)), target_(std::move(target)) {}
  ~AgentSockLink() {
    if (!made_) return;
    char buf[4096];
    ssize_t n = ::readlink(link_.c_str(), buf, sizeof buf);
    if (n > 0 && std::string(buf, static_cast<size_t>(n)) == target_) ::unlink(link_.c_str());
  }
  AgentSockLink(const AgentSockLink&) = delete;
  AgentSockLink& operator=(const AgentSockLink&) = delete;
  Status make() {
    if (::symlink(target_.c_str(), link_.c_str()) != 0) return sys_error("--agent-sock " + link_);
    made_ = true;
    return ok_status();
  }

 private:
  std::string link_, target_;
  bool made_ = false;
};

Result<std::vector<PreparedShare>> open_and_prepare_shares(const ProcessSandboxConfig& cfg,
                                                           std::vector<UniqueFd> dirs, uid_t uid,
                                                           gid_t gid) {
  TRY_STATUS(check_share_list(cfg.shares, "--mount"));
  for (const ShareSpec& s : cfg.shares)
    if (s.mode == ShareMode::kRwNoDelete) TRY_STATUS(check_nodelete_supported());
  if (dirs.empty())
    for (const ShareSpec& s : cfg.shares)
      dirs.push_back(TRY(open_share_dir(s)));
  return prepare_shares(cfg.shares, std::move(dirs), uid, gid);
}

}  // namespace

uid_t derived_sandbox_uid(const std::string& id) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : id)
    h = (h ^ c) * 16777619u;
  return kDerivedUidBase + h % kDerivedUidSpan;
}

int run_process_sandbox(const ProcessSandboxConfig& cfg, std::vector<UniqueFd> share_dirs) {
  // Everything is checked before anything is created.
  if (!cfg.allow_egress.empty())
    return fail(
        bad("--allow-egress: egress is not supported by the process backend yet (its "
            "sandboxes get an empty network namespace); use --isolation microvm"));
  if (Status s = check_file("--rootfs", cfg.rootfs); !s.ok()) return fail(s.error());
  if (!cfg.agent_exe.empty())
    if (Status s = check_file("--agent", cfg.agent_exe); !s.ok()) return fail(s.error());
  struct stat st {};
  if (::lstat(cfg.agent_sock.c_str(), &st) == 0)
    return fail(bad("--agent-sock: " + cfg.agent_sock + " already exists"));
  std::string token;
  if (!cfg.token_file.empty()) {
    auto t = read_token(cfg.token_file);
    if (!t.ok()) return fail(t.error());
    token = std::move(*t);
  }
  const uid_t uid = cfg.uid ? cfg.uid : derived_sandbox_uid(cfg.id);
  const gid_t gid = cfg.gid ? cfg.gid : uid;
  // The shares are made ready (detached, idmapped mounts) before anything of the sandbox exists,
  // so a folder that cannot be shared, or a kernel that cannot keep rw-nodelete, fails the start
  // with nothing to undo; never a weaker mount instead.
  auto shares = open_and_prepare_shares(cfg, std::move(share_dirs), uid, gid);
  if (!shares.ok()) return fail(shares.error());
  auto mounts = detect_cgroup_mounts();
  if (!mounts.ok()) return fail(mounts.error());
  CgroupLimits limits{cfg.mem_limit_mib << 20, cfg.cpu_quota_pct, cfg.pids_max};
  auto cgroups = JailCgroups::plan(*mounts, cfg.cgroup_version, limits, cfg.cgroup_name());
  if (!cgroups.ok()) return fail(cgroups.error());

  // <jail>/run stays root's (0700): the agent's socket is bound there before the drop to the
  // sandbox's uid, which can then neither replace it nor plant a symlink for the host to follow.
  JailFolder jail(JailFolderSpec{cfg.chroot_base, cfg.id, 0, 0, kWho}, std::move(*cgroups));
  if (Status s = jail.acquire(); !s.ok()) return fail(s.error());
  // Made before the sandbox exists and removed with the jail; empty unless its sandbox gets
  // egress, when the daemon's proxy binds its socket here.
  if ((::mkdir(cfg.egress_dir().c_str(), 0755) != 0 && errno != EEXIST) ||
      ::chmod(cfg.egress_dir().c_str(), 0755) != 0)  // whatever the umask
    return fail(sys_error("mkdir " + cfg.egress_dir()));

  auto stops = BlockedStopSignals::block();
  if (!stops.ok()) return fail(stops.error());
  int sp[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0)
    return fail(sys_error("socketpair"));
  UniqueFd ctl(sp[0]), child_ctl(sp[1]);

  int pidfd = -1;
  auto cloned = clone_into_jail(jail, CLONE_NEWNET, &pidfd);
  if (!cloned.ok()) return fail(cloned.error());
  const long pid = *cloned;
  if (pid == 0) {
    ctl.reset();
    stops->close_fd();
    ProcessChildPlan plan{&cfg, uid, gid, token, child_ctl.get(), &*shares};
    process_sandbox_child_main(plan);
  }
  shares->clear();  // the child holds its own copies until it has mounted them
  UniqueFd child(pidfd);
  child_ctl.reset();
  token.assign(token.size(), '0');

  AgentSockLink link(cfg.agent_sock, jail.spec().run_dir() + "/agent.sock");
  Status up = handshake(jail, static_cast<pid_t>(pid), ctl.get(), uid, gid);
  if (up.ok()) up = link.make();
  if (up.ok()) {
    fprintf(stderr, "carapace: process sandbox '%s' ready: agent at %s\n", cfg.id.c_str(),
            cfg.agent_sock.c_str());
  } else {
    ::syscall(SYS_pidfd_send_signal, child.get(), SIGKILL, nullptr, 0);
  }
  ctl.reset();

  auto waited = supervise_child(child.get(), stops->fd());
  std::string oom = jail.cgroups().oom_report();
  Status cleaned = jail.release();
  stops->unblock();
  if (!cleaned.ok())
    fprintf(stderr, "%s: error: cleanup: %s\n", kWho, cleaned.error().describe().c_str());
  if (!up.ok()) return fail(up.error());
  if (!waited.ok()) return fail(waited.error());
  const siginfo_t& si = *waited;
  int status = exit_status_of(si);
  if (status != 0 || !oom.empty())
    fprintf(stderr, "carapace: process sandbox '%s' ended with status %d%s%s\n", cfg.id.c_str(),
            status, oom.empty() ? "" : ": ", oom.c_str());
  return status;
}

}  // namespace carapace
