#include "jailer/supervisor.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "jailer/jail_fs.h"

namespace carapace {

Status JailFolder::acquire() {
  TRY_STATUS(make_dirs(spec_.base, 0711));
  const std::string dir = spec_.dir();
  bool stale = ::mkdir(dir.c_str(), 0711) != 0;
  if (stale && errno != EEXIST) return sys_error("mkdir " + dir);
  lock_ = UniqueFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!lock_.valid()) return sys_error("open " + dir);
  // The lock is what tells a live jail from a leftover one.
  if (::flock(lock_.get(), LOCK_EX | LOCK_NB) != 0) {
    lock_.reset();
    return make_error("jail '" + spec_.id + "' is in use by a running supervisor");
  }
  owns_dir_ = true;
  if (stale) {
    fprintf(stderr, "%s: removing leftovers of an earlier jail '%s'\n", spec_.who.c_str(),
            spec_.id.c_str());
    TRY_STATUS(remove_dir_contents(lock_.get(), dir));
  }
  TRY_STATUS(cgroups_.remove_stale());
  owns_cgroups_ = true;
  TRY_STATUS(cgroups_.create());
  if (::mkdir(spec_.root_dir().c_str(), 0755) != 0) return sys_error("mkdir " + spec_.root_dir());
  // The jail's /run: the one place the jailed process can write that the host sees.
  if (::mkdir(spec_.run_dir().c_str(), 0700) != 0) return sys_error("mkdir " + spec_.run_dir());
  if (::chown(spec_.run_dir().c_str(), spec_.run_uid, spec_.run_gid) != 0)
    return sys_error("chown " + spec_.run_dir());
  return ok_status();
}

Status JailFolder::release() {
  Status result;
  if (owns_cgroups_) {
    result = cgroups_.remove();
    owns_cgroups_ = false;
  }
  if (owns_dir_) {
    Status s = remove_tree(spec_.dir());
    if (!s.ok() && result.ok()) result = std::move(s);
    owns_dir_ = false;
  }
  lock_.reset();
  return result;
}

Status remove_jail_leftovers(const std::string& base, const std::string& id,
                             const std::string& cgroup_id, JailLeftovers when) {
  const std::string dir = base + "/" + id;
  if (when == JailLeftovers::kIfUnlocked) {
    UniqueFd lock(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (lock.valid() && ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0)
      return ok_status();  // a live supervisor owns it
  }
  TRY_STATUS(remove_stale_cgroups(cgroup_id));
  return remove_tree(dir);
}

Status remove_stale_cgroups(const std::string& cgroup_id) {
  const bool one_name = !cgroup_id.empty() && cgroup_id != "." && cgroup_id != ".." &&
                        cgroup_id.find_first_not_of(
                            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                            "0123456789._-") == std::string::npos;
  if (!one_name) return make_error("cgroup: '" + cgroup_id + "' is not a jail's cgroup name");
  auto mounts = TRY(detect_cgroup_mounts());
  auto cgroups = TRY(JailCgroups::plan(mounts, CgroupVersion::kAuto, {}, cgroup_id));
  return cgroups.remove_stale();
}

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
    sigaddset(&set, s);
  return set;
}

Result<BlockedStopSignals> BlockedStopSignals::block() {
  BlockedStopSignals out;
  sigset_t stops = stop_signals();
  ::sigprocmask(SIG_BLOCK, &stops, &out.old_mask_);
  out.fd_ = UniqueFd(::signalfd(-1, &stops, SFD_CLOEXEC));
  if (!out.fd_.valid()) return sys_error("signalfd");
  return out;
}

void BlockedStopSignals::unblock() {
  ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
}

std::string read_until_eof(int fd) {
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::optional<int> supervisor_command_ends(const SupervisorCommand& cmd, const Error* parse_error,
                                           bool help) {
  if (parse_error != nullptr) {
    fprintf(stderr, "%s: %s\n", cmd.error_prefix, parse_error->describe().c_str());
    return 2;
  }
  if (help) {
    fputs(cmd.usage, stdout);
    return 0;
  }
  if (::geteuid() != 0) {
    fprintf(stderr, "%s: %s\n", cmd.error_prefix, cmd.needs_root);
    return 1;
  }
  return std::nullopt;
}

int exit_status_of(const siginfo_t& si) {
  if (si.si_code == CLD_EXITED) return si.si_status;
  return 128 + si.si_status;
}

Result<long> clone_into_jail(JailFolder& folder, uint64_t extra_flags, int* pidfd) {
  clone_args args{};
  args.flags = CLONE_PIDFD | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | extra_flags;
  args.pidfd = reinterpret_cast<uintptr_t>(pidfd);
  args.exit_signal = SIGCHLD;
  UniqueFd v2_fd;  // closed on return, in the parent and in the child
  const std::string& v2_dir = folder.cgroups().v2_dir();
  if (!v2_dir.empty()) {
    v2_fd = UniqueFd(::open(v2_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!v2_fd.valid()) return sys_error("open " + v2_dir);
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(v2_fd.get());
  }
  fflush(nullptr);
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid < 0) return sys_error("clone3");
  return pid;
}

Result<siginfo_t> supervise_child(int pidfd, int sigfd) {
  pollfd fds[2] = {{pidfd, POLLIN, 0}, {sigfd, POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return sys_error("poll");
    }
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo ssi;
      if (::read(sigfd, &ssi, sizeof ssi) == sizeof ssi)
        ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
    }
    if (fds[0].revents & (POLLIN | POLLHUP)) break;
  }
  siginfo_t si{};
  if (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &si, WEXITED) != 0)
    return sys_error("waitid");
  return si;
}

}  // namespace carapace
