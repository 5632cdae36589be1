#include "jailer/jail.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "common/base/unique_fd.h"
#include "jailer/cgroup.h"
#include "jailer/jail_child.h"
#include "jailer/supervisor.h"

namespace carapace {
namespace {

constexpr int kExitHost = 1;
constexpr int kExitBadInput = 2;

int fail(const Error& e) {
  fprintf(stderr, "carapace jail: error: %s\n", e.describe().c_str());
  return e.kind == ErrorKind::kInvalidInput ? kExitBadInput : kExitHost;
}

}  // namespace

int run_jail(const JailConfig& cfg) {
  // Everything is checked before anything is created.
  if (Status s = check_jail_host_paths(cfg); !s.ok()) return fail(s.error());
  auto runtime = elf_runtime_files(cfg.exec_file);
  if (!runtime.ok()) return fail(runtime.error());
  auto mounts = detect_cgroup_mounts();
  if (!mounts.ok()) return fail(mounts.error());
  CgroupLimits limits{cfg.mem_limit_mib << 20, cfg.cpu_quota_pct, cfg.pids_max};
  auto cgroups = JailCgroups::plan(*mounts, cfg.cgroup_version, limits, cfg.id);
  if (!cgroups.ok()) return fail(cgroups.error());

  JailFolder jail(JailFolderSpec{cfg.chroot_base, cfg.id, cfg.uid, cfg.gid, "carapace jail"},
                  std::move(*cgroups));
  if (Status s = jail.acquire(); !s.ok()) return fail(s.error());

  auto stops = BlockedStopSignals::block();
  if (!stops.ok()) return fail(stops.error());
  int sync_pipe[2], err_pipe[2];
  if (::pipe2(sync_pipe, O_CLOEXEC) != 0) return fail(sys_error("pipe"));
  UniqueFd sync_r(sync_pipe[0]), sync_w(sync_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return fail(sys_error("pipe"));
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);

  int pidfd = -1;
  auto cloned =
      clone_into_jail(jail, cfg.netns == JailNetNs::kNew ? uint64_t{CLONE_NEWNET} : 0, &pidfd);
  if (!cloned.ok()) return fail(cloned.error());
  const long pid = *cloned;
  if (pid == 0) {
    sync_w.reset();
    err_r.reset();
    stops->close_fd();
    JailChildPlan plan{&cfg, *runtime, sync_r.get(), err_w.get()};
    jail_child_main(plan);
  }
  UniqueFd child(pidfd);
  sync_r.reset();
  err_w.reset();

  // The limits are in place before the child drops privileges and execs.
  std::string setup_error, child_error;
  if (Status s = jail.cgroups().add_process(static_cast<pid_t>(pid), true); !s.ok()) {
    setup_error = s.error().describe();
    ::syscall(SYS_pidfd_send_signal, child.get(), SIGKILL, nullptr, 0);
  } else if (::write(sync_w.get(), "g", 1) != 1) {
    setup_error = "cannot start the jailed child";
  }
  // A child that failed on its own says why on the error pipe; that beats the supervisor's view
  // (e.g. ESRCH placing it).
  child_error = read_until_eof(err_r.get());

  auto waited = supervise_child(child.get(), stops->fd());
  std::string oom = jail.cgroups().oom_report();
  Status cleaned = jail.release();
  stops->unblock();
  if (!cleaned.ok())
    fprintf(stderr, "carapace jail: error: cleanup: %s\n", cleaned.error().describe().c_str());
  if (child_error.empty()) child_error = setup_error;
  if (!child_error.empty()) {
    fprintf(stderr, "carapace jail: error: %s\n", child_error.c_str());
    return kExitHost;
  }
  if (!waited.ok()) return fail(waited.error());
  const siginfo_t& si = *waited;
  if (si.si_code != CLD_EXITED)
    fprintf(stderr, "carapace jail: '%s' killed by signal %d (%s)%s%s\n", cfg.id.c_str(),
            si.si_status, strsignal(si.si_status), oom.empty() ? "" : ": ", oom.c_str());
  else if (!oom.empty())
    fprintf(stderr, "carapace jail: '%s': %s\n", cfg.id.c_str(), oom.c_str());
  return exit_status_of(si);
}

}  // namespace carapace
