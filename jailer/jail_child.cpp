#include "jailer/jail_child.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstring>

#include "jailer/jail_fs.h"

namespace carapace {
namespace {

Status do_mount(const std::string& src, const std::string& dst, const char* type,
                unsigned long flags, const char* data = nullptr) {
  if (::mount(src.empty() ? nullptr : src.c_str(), dst.c_str(), type, flags, data) != 0)
    return sys_error("mount " + (src.empty() ? std::string(type ? type : "") : src) + " on " + dst);
  return ok_status();
}

// A bind mount of a host file or directory at the same path under `root`.
Status bind_into(const std::string& root, const std::string& host, const std::string& jail_path,
                 bool read_only) {
  struct stat st {};
  if (::stat(host.c_str(), &st) != 0) return sys_error("stat " + host);
  const std::string target = root + jail_path;
  TRY_STATUS(make_mount_point(target, S_ISDIR(st.st_mode)));
  TRY_STATUS(do_mount(host, target, nullptr, MS_BIND));
  unsigned long flags = MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | (read_only ? MS_RDONLY : 0);
  return do_mount("", target, nullptr, flags);
}

// A device node copied from the host's (same major/minor), owned by the jail's ids when private.
Status make_node(const std::string& root, const char* path, mode_t mode, bool owned, bool required,
                 const JailConfig& cfg) {
  struct stat st {};
  if (::stat(path, &st) != 0 || !S_ISCHR(st.st_mode)) {
    if (!required) return ok_status();
    return make_error(std::string(path) + " is missing on the host");
  }
  const std::string target = root + path;
  if (::mknod(target.c_str(), S_IFCHR | mode, st.st_rdev) != 0) return sys_error("mknod " + target);
  if (owned && ::chown(target.c_str(), cfg.uid, cfg.gid) != 0) return sys_error("chown " + target);
  return ok_status();
}

Status build_root(const JailChildPlan& plan) {
  const JailConfig& cfg = *plan.cfg;
  const std::string root = cfg.root_dir();
  // Nothing below propagates back to the host's mount namespace.
  TRY_STATUS(do_mount("", "/", nullptr, MS_REC | MS_PRIVATE));
  // The root is a small tmpfs, not the host directory: mount points made inside it never touch
  // the host's disk, and removing the jail afterwards needs no unmount per mount point (each
  // such detach waits for an RCU grace period). Device nodes live in it, so no MS_NODEV here;
  // it is made read-only once built.
  TRY_STATUS(do_mount("tmpfs", root, "tmpfs", MS_NOSUID, "mode=755,size=1m,nr_inodes=4096"));
  // /tmp: private scratch space, charged to the jail's memory cgroup. Mounted before the binds,
  // so files listed from the host's /tmp (a build tree there, say) appear on top of it.
  TRY_STATUS(make_dirs(root + "/tmp", 0755));
  TRY_STATUS(do_mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      "mode=1777,size=64m"));
  TRY_STATUS(bind_into(root, cfg.exec_file, cfg.exec_file, true));
  for (const RuntimeFile& f : plan.runtime) {
    bool covered = false;
    for (const JailBind& b : cfg.binds)
      covered = covered || path_within(f.jail_path, b.path);
    if (!covered) TRY_STATUS(bind_into(root, f.host_path, f.jail_path, true));
  }
  for (const JailBind& b : cfg.binds)
    TRY_STATUS(bind_into(root, b.path, b.path, b.read_only));

  // /dev: exactly the nodes a VMM opens.
  TRY_STATUS(make_dirs(root + "/dev/net", 0755));
  TRY_STATUS(make_node(root, "/dev/kvm", 0600, true, true, cfg));
  TRY_STATUS(make_node(root, "/dev/urandom", 0666, false, true, cfg));
  TRY_STATUS(make_node(root, "/dev/null", 0666, false, true, cfg));
  TRY_STATUS(make_node(root, "/dev/net/tun", 0600, true, false, cfg));
  // /run: the host's <jail>/run, so the host can reach sockets the VMM makes there.
  TRY_STATUS(make_dirs(root + "/run", 0755));
  TRY_STATUS(do_mount(cfg.run_dir(), root + "/run", nullptr, MS_BIND));
  TRY_STATUS(do_mount("", root + "/run", nullptr,
                      MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC));
  if (cfg.proc == JailProc::kPids) {
    // This process is PID 1 of the jail's PID namespace, so the new procfs shows the jail's
    // processes only; subset=pid leaves out /proc/sys, /proc/sysrq-trigger, /proc/kcore and
    // every other system-wide file.
    TRY_STATUS(make_dirs(root + "/proc", 0555));
    TRY_STATUS(do_mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                        "subset=pid,hidepid=invisible"));
  }
  TRY_STATUS(do_mount("", root, nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID));

  if (::chdir(root.c_str()) != 0) return sys_error("chdir " + root);
  // pivot_root(".", ".") stacks the old root on top of the new one; detaching it leaves no
  // directory behind to remove.
  if (::syscall(SYS_pivot_root, ".", ".") != 0) return sys_error("pivot_root");
  if (::umount2(".", MNT_DETACH) != 0) return sys_error("umount old root");
  if (::chdir("/") != 0) return sys_error("chdir /");
  return ok_status();
}

Status apply_rlimits(const JailConfig& cfg) {
  auto set = [](int res, rlim_t v, const char* name) -> Status {
    rlimit rl{v, v};
    if (::setrlimit(res, &rl) != 0) return sys_error(std::string("setrlimit ") + name);
    return ok_status();
  };
  // Asking more open files than this host lets even root give (no CAP_SYS_RESOURCE, as in some
  // containers) gets what there is: a lower limit only confines the jail more.
  rlimit cur{};
  rlim_t nofile = cfg.nofile;
  if (::getrlimit(RLIMIT_NOFILE, &cur) == 0 && nofile > cur.rlim_max) {
    rlimit want{nofile, nofile};
    if (::setrlimit(RLIMIT_NOFILE, &want) != 0 && errno == EPERM) nofile = cur.rlim_max;
  }
  TRY_STATUS(set(RLIMIT_NOFILE, nofile, "RLIMIT_NOFILE"));
  TRY_STATUS(
      set(RLIMIT_FSIZE, cfg.fsize_mib ? cfg.fsize_mib << 20 : RLIM_INFINITY, "RLIMIT_FSIZE"));
  return set(RLIMIT_CORE, 0, "RLIMIT_CORE");
}

Status drop_privileges(const JailConfig& cfg) {
  // The bounding set first (needs CAP_SETPCAP, which goes with the uid change below).
  for (int cap = 0; cap <= 63; ++cap)
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
      return sys_error("PR_CAPBSET_DROP");
  if (::setgroups(0, nullptr) != 0) return sys_error("setgroups");
  if (::setresgid(cfg.gid, cfg.gid, cfg.gid) != 0) return sys_error("setresgid");
  if (::setresuid(cfg.uid, cfg.uid, cfg.uid) != 0) return sys_error("setresuid");
  // The uid change cleared the permitted and effective sets; clear the inheritable set too.
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capset, &hdr, data) != 0) return sys_error("capset");
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    return sys_error("PR_CAP_AMBIENT_CLEAR_ALL");
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return sys_error("PR_SET_NO_NEW_PRIVS");
  return ok_status();
}

Status setup_and_exec(const JailChildPlan& plan) {
  const JailConfig& cfg = *plan.cfg;
  ::umask(0);
  TRY_STATUS(build_root(plan));
  // The supervisor moves us into the cgroups while we build the root (a v1 migration waits for
  // an RCU grace period, ~10 ms); nothing unprivileged runs before it says we are placed.
  char placed = 0;
  if (::read(plan.sync_fd, &placed, 1) != 1) return make_error("supervisor went away");
  if (::sethostname(cfg.id.data(), cfg.id.size()) != 0) return sys_error("sethostname");
  TRY_STATUS(apply_rlimits(cfg));
  TRY_STATUS(drop_privileges(cfg));
  // The credential change reset the parent-death signal; set it again, then make sure the
  // supervisor did not die in between (its end of the sync pipe would be closed).
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return sys_error("PR_SET_PDEATHSIG");
  pollfd pfd{plan.sync_fd, POLLIN, 0};
  if (::poll(&pfd, 1, 0) != 0) return make_error("supervisor went away");
  ::umask(077);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(cfg.exec_file.c_str()));
  for (const std::string& a : cfg.exec_args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The environment is replaced, not filtered: nothing from the caller reaches the VMM.
  char path_env[] = "PATH=/usr/bin:/bin";
  char* envp[] = {path_env, nullptr};
  ::execve(cfg.exec_file.c_str(), argv.data(), envp);
  return sys_error("execve " + cfg.exec_file);
}

}  // namespace

void jail_child_main(const JailChildPlan& plan) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  Status s = setup_and_exec(plan);
  std::string msg = s.error().describe();
  (void)!::write(plan.err_fd, msg.data(), msg.size());
  ::_exit(1);
}

}  // namespace carapace
