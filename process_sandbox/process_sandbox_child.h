// The process sandbox's PID 1, between clone3 and the agent's exec (process_sandbox.h): builds the
// root from the read-only image as real root in its own mount namespace, enters a new user
// namespace and drops to the sandbox's uid, then forks and execs the agent under the workload
// seccomp filter and stays as its reaper. Every step's failure is sent as one line on the control
// socket, which the supervisor prints.
#pragma once

#include <string>
#include <vector>

#include "process_sandbox/process_sandbox.h"
#include "process_sandbox/share_mounts.h"

namespace carapace {

// Messages on the control socket (SOCK_SEQPACKET, one per datagram).
inline constexpr char kMsgPlaced = 'g';   // supervisor → child: in the cgroups
inline constexpr char kMsgUserNs = 'u';   // child → supervisor: in the user ns, write the maps
inline constexpr char kMsgMapped = 'm';   // supervisor → child: maps written
inline constexpr char kMsgRunning = 'r';  // child → supervisor: the agent runs
inline constexpr char kMsgError = 'E';    // child → supervisor: 'E' + one line
inline constexpr char kMsgRefused = 'B';  // child → supervisor: 'B' + one line (bad input)

struct ProcessChildPlan {
  const ProcessSandboxConfig* cfg = nullptr;
  uid_t host_uid = 0;
  gid_t host_gid = 0;
  std::string token;  // "" for none
  int ctl_fd = -1;
  std::vector<PreparedShare>* shares = nullptr;  // mounted by the child, then closed
};

[[noreturn]] void process_sandbox_child_main(const ProcessChildPlan& plan);

}  // namespace carapace
