// The process isolation back end: the guest agent itself, not a VM, in a jail on the
// host kernel. `carapace run --isolation process` runs one to the end:
//
//   supervisor (root, host)                    child = PID 1 of new pid/mount/ipc/uts/net
//   namespaces ─ jail folder under flock, cgroups         ─ ext4 image on a read-only loop device,
//   tmpfs upper, ─ clone3 into the namespaces                 overlayfs root, /dev, /proc, /tmp,
//   /run/carapace ─ places the child in the cgroups            (= <jail>/run on the host),
//   pivot_root, lo up ─ writes its user-namespace id maps        ─ new user namespace; drops to uid
//   1000 inside ─ links --agent-sock to <jail>/run/...       (= the sandbox's unprivileged uid on
//   the host) ─ waits on the pidfd; removes everything   ─ forks the agent (PID 2) under the
//   workload seccomp
//                                                filter, token through a pipe; reaps; exits with it
//
// This is layer one of defence in depth only, and weaker than a microVM: the workload shares the
// host kernel, and every system call the filter allows is kernel attack surface a VM would keep
// behind the hypervisor (jailer/README.md, "Process isolation").
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "jailer/jail_config.h"
#include "process_sandbox/share_spec.h"

namespace carapace {

struct ProcessSandboxConfig {
  std::string id;
  std::string rootfs;      // ext4 image, mounted read-only
  std::string agent_sock;  // host path: a symlink to the agent's socket in <jail>/run
  std::string agent_exe;   // optional: bound read-only over /usr/sbin/carapace-agent
  std::string token_file;  // optional: host file with the token (read here, never on a cmdline)
  std::string chroot_base = "/srv/carapace-process";
  uid_t uid = 0;  // the sandbox's uid and gid on the host (0: derived from the id)
  gid_t gid = 0;
  uint64_t mem_limit_mib = 0;  // 0: none
  uint64_t pids_max = 0;       // 0: none
  uint32_t cpu_quota_pct = 0;  // 0: none
  uint64_t tmp_mib = 256;      // size of each tmpfs the sandbox writes (root overlay, /tmp)
  uint64_t nofile = 4096;
  CgroupVersion cgroup_version = CgroupVersion::kAuto;
  std::vector<std::string> allow_egress;  // refused: not supported by this back end yet
  // Host folders bind-mounted (idmapped) at their guest paths (share_mounts.h); rw-nodelete ones
  // under Landlock (nodelete_landlock.h).
  std::vector<ShareSpec> shares;

  std::string jail_dir() const { return chroot_base + "/" + id; }
  // Where a host-side egress proxy may put its socket for this sandbox (kEgressDirInside in the
  // sandbox, read-only): root's, so the sandbox can connect to what is there but replace nothing.
  std::string egress_dir() const { return jail_dir() + "/egress"; }
  std::string cgroup_name() const { return "process-" + id; }
};

// The sandbox's view of egress_dir().
inline constexpr char kEgressDirInside[] = "/run/carapace-egress";

// The uid inside the sandbox's user namespace that the host uid is mapped to.
constexpr uid_t kSandboxInnerId = 1000;
// Host uids derived from the id when --uid is not given: [kDerivedUidBase, +kDerivedUidSpan).
constexpr uid_t kDerivedUidBase = 200000;
constexpr uid_t kDerivedUidSpan = 60000;
uid_t derived_sandbox_uid(const std::string& id);

// Runs the sandbox to the end; returns the exit status (the agent's, 128+N for signal N, 1 for
// a host error, 2 for bad input). Prints "carapace: process sandbox 'ID' ready: agent at PATH"
// on stderr once the agent runs (it then binds its socket within milliseconds; callers ping).
// `share_dirs`, when given, are cfg.shares' host folders already open (open_share_dir), one per
// share; else they are opened here.
int run_process_sandbox(const ProcessSandboxConfig& cfg, std::vector<UniqueFd> share_dirs = {});

}  // namespace carapace
