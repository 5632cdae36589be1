// Parsing of `carapace restore` flags, and the per-clone configuration (docs/security.md #25). Pure
// (no I/O), so every rule is unit tested.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "vmm/machine/clone_identity.h"
#include "vmm/machine/machine_config.h"

namespace carapace {

inline constexpr uint32_t kMaxClones = 1024;

struct RestoreArgs {
  std::string snapshot_dir;
  uint32_t clones = 1;
  // Console, devices and timeout as given; clone_config() derives each clone's from it.
  MachineConfig machine;
  int log_level = 1;
  bool deferred_teardown = true;
  std::string api_sock;         // --api-sock: per clone PATH.<i> when N > 1
  std::string agent_token;      // --agent-token: send each clone's agent a restore notice
  std::string agent_token_out;  // --agent-token-out: where the clones' new tokens go
  double agent_timeout_s = 10;  // --agent-timeout: for each clone's answer to the notice
  bool seccomp = true;
  // --paused: the vCPUs stay parked (no guest CPU time) until PUT /vm/resume on the API socket;
  // how the daemon keeps a pool of restored VMs that cost nothing while they wait.
  bool start_paused = false;
};

// Every refusal is one line naming the flag, and happens before anything is built: a clone
// identity that would collide (a writable disk shared by clones, a CID range past the top) is
// refused here, not after some clones started.
Result<RestoreArgs> parse_restore_args(const std::vector<std::string>& args);

// Clone `i`'s configuration. With one clone it is the flags as given; with N > 1 every clone gets
// its own identity:
//   --vsock cid=C,uds=P      clone i: cid C+i, uds P.<i>
//   --net unix=P / tap=T     clone i: unix P.<i> / tap T.<i>; mac=M: M + i (in its low 24 bits),
//                            no mac=: a fresh random MAC per clone
//   --drive overlay=F        clone i: overlay F.<i> (a writable --drive without overlay= is
//   refused)
//   --console file:P         clone i: P.<i>
MachineConfig clone_config(const RestoreArgs& args, uint32_t i);
// (the rules are clone_identity(), vmm/machine/clone_identity.h)

extern const char kRestoreUsage[];

}  // namespace carapace
