// The VMM's seccomp allowlists, one per thread role, as one readable table (seccomp_policy.cpp).
// A thread may make only the system calls its role lists; anything else kills the process with
// SIGSYS (seccomp.h). The roles that face the guest — vCPU threads (guest exits) and the event
// loop (device I/O) — get the shortest lists; a virtio-fs thread gets the file calls of its
// file server (*at calls beneath its own directory fds) and no more.
#pragma once

#include <cstdint>
#include <span>

namespace carapace {

enum class ThreadRole : uint8_t {
  kMain,       // CLI thread: builds VMs, serves the control API, writes snapshots
  kEventLoop,  // virtio device work: rings, block I/O, sockets, timers
  kVcpu,       // KVM_RUN and the port/MMIO exits it returns
  kConsole,    // writes guest console output to a file or stdout
  kFs,         // one per virtio-fs device: its queues and the file server's host file calls
};
inline constexpr int kThreadRoles = 5;
const char* thread_role_name(ThreadRole role);

// Extra conditions on a syscall's arguments, checked by the filter.
enum class ArgCheck : uint8_t {
  kNone,
  kKvmIoctl,    // ioctl: only KVM requests (type 0xAE) — the vCPU thread's ioctls
  kUnixSocket,  // socket: AF_UNIX only
};

struct SyscallRule {
  long nr;
  const char* name;
  uint8_t roles;  // bit (1 << role)
  ArgCheck check = ArgCheck::kNone;
};

// Every rule; a role's list is the rules with its bit set.
std::span<const SyscallRule> seccomp_rules();

}  // namespace carapace
