// What every jail supervisor shares (`carapace jail` and the process isolation back end): the
// jail folder under an flock with the leftovers of a dead supervisor removed, the cgroups, the stop
// signals taken through a signalfd, and the wait on the child's pidfd.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "jailer/cgroup.h"

namespace carapace {

struct JailFolderSpec {
  std::string base;  // the chroot base, e.g. /srv/carapace-jail
  std::string id;
  uid_t run_uid = 0;  // owner of <jail>/run (the jailed user, as the host sees it)
  gid_t run_gid = 0;
  std::string who = "carapace jail";  // prefix of the "removing leftovers" line

  std::string dir() const { return base + "/" + id; }
  std::string root_dir() const { return dir() + "/root"; }
  std::string run_dir() const { return dir() + "/run"; }
};

// What one jail holds on the host; released in the destructor even on an early return.
class JailFolder {
 public:
  JailFolder(JailFolderSpec spec, JailCgroups cgroups)
      : spec_(std::move(spec)), cgroups_(std::move(cgroups)) {}
  ~JailFolder() { (void)release(); }
  JailFolder(const JailFolder&) = delete;
  JailFolder& operator=(const JailFolder&) = delete;

  // Creates (or takes over) the jail folder under a lock, removing what a dead supervisor of
  // the same id left, then the cgroups, <jail>/root and <jail>/run.
  Status acquire();
  JailCgroups& cgroups() { return cgroups_; }
  const JailFolderSpec& spec() const { return spec_; }
  // Removes the cgroups and the jail folder (with anything the jailed process left in run/).
  Status release();

 private:
  JailFolderSpec spec_;
  JailCgroups cgroups_;
  UniqueFd lock_;
  bool owns_dir_ = false;
  bool owns_cgroups_ = false;
};

// What a jail whose supervisor was SIGKILLed leaves, removed from outside: anything still running
// in cgroups carapace/<cgroup_id> is killed, those cgroups and the folder <base>/<id> go. Nothing
// there is not an error.
//   kIfUnlocked:      a jail whose folder is locked is left alone (its supervisor may be alive:
//                     the caller found the folder, e.g. scanning a template's jails/).
//   kSupervisorGone:  the caller reaped the jail's supervisor; a lock still held is held by one
//                     of the jail's own processes (the sandbox's init inherits the supervisor's
//                     descriptors), which dies with the cgroups.
enum class JailLeftovers { kIfUnlocked, kSupervisorGone };
Status remove_jail_leftovers(const std::string& base, const std::string& id,
                             const std::string& cgroup_id,
                             JailLeftovers when = JailLeftovers::kIfUnlocked);
// The cgroup half of that alone: carapace/<cgroup_id> in every mounted hierarchy, with whatever
// still runs in it killed. `cgroup_id` must be one name ([A-Za-z0-9._-], not "." or ".."): never
// a path to another cgroup.
Status remove_stale_cgroups(const std::string& cgroup_id);

// clone3 of a jail's first process: new mount, PID, IPC and UTS namespaces plus `extra_flags`
// (e.g. CLONE_NEWNET), a pidfd, and born in the unified tree's cgroup of `folder` when there is
// one (no migration to pay for there). Like fork: 0 in the child, the child's pid in the parent,
// where `*pidfd` is set. Without a stack the child shares nothing, so a single-threaded
// supervisor's child may allocate until it execs.
Result<long> clone_into_jail(JailFolder& folder, uint64_t extra_flags, int* pidfd);

// SIGINT, SIGTERM, SIGHUP, SIGQUIT: they end the jail. The supervisor blocks them and takes them
// through a signalfd, then kills the child (a PID-namespace init ignores signals it has no
// handler for, so forwarding would not do).
sigset_t stop_signals();

// The stop signals blocked and read through a signalfd while a supervisor waits on its child.
// They stay blocked until unblock(), on an error return too: a supervisor that gives up still
// removes its jail without being killed halfway.
class BlockedStopSignals {
 public:
  static Result<BlockedStopSignals> block();
  int fd() const { return fd_.get(); }
  // In the jail's first process, which must not hold the supervisor's signalfd.
  void close_fd() { fd_.reset(); }
  // Restores the signal mask from before block().
  void unblock();

 private:
  sigset_t old_mask_{};
  UniqueFd fd_;
};

// Everything written to `fd` until its writer closes it (EINTR retried; a read error ends it):
// a jailed child's error pipe, which reaches EOF at its execve (O_CLOEXEC) or exit.
std::string read_until_eof(int fd);

// Waits for the child behind `pidfd`, killing it on a stop signal read from `sigfd`; returns its
// waitid() record.
Result<siginfo_t> supervise_child(int pidfd, int sigfd);

// How a supervising command (`carapace jail`, `carapace run --isolation process`) starts, before
// anything is created: a parse error is one line and status 2, --help prints the usage (status
// 0), and anything else needs root (status 1, `needs_root` says why).
struct SupervisorCommand {
  const char* error_prefix;  // "carapace jail: error"
  const char* usage;
  const char* needs_root;  // the line printed without root, after the prefix
};
// The status to exit with when the command ends here, nullopt when it goes on.
std::optional<int> supervisor_command_ends(const SupervisorCommand& cmd, const Error* parse_error,
                                           bool help);
template <typename Parsed>
std::optional<int> supervisor_command_ends(const SupervisorCommand& cmd,
                                           const Result<Parsed>& parsed) {
  return supervisor_command_ends(cmd, parsed.ok() ? nullptr : &parsed.error(),
                                 parsed.ok() && parsed->help);
}

// The exit status a supervisor reports for its child: the child's, 128+N for signal N.
int exit_status_of(const siginfo_t& si);

}  // namespace carapace
