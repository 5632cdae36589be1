// The microvm back end's pure parts: the `carapace run` / `carapace restore` command lines it
// spawns, the per-VM file names and CIDs, and the random tokens. No I/O apart from getrandom,
// so every rule is unit tested (tests/service/microvm_args_test.cpp).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "daemon/backends/backend.h"

namespace carapace::service {

// A file console never grows past this (docs/security.md #29); the rest is dropped and counted.
inline constexpr uint64_t kConsoleMaxBytes = 1 << 20;

// One VMM's folder inside the template's folder, holding everything of that VM: its sockets, its
// console, the VMM's own output, and a snapshot it writes (template build, fork) until the back
// end takes it out. A jailed VMM gets this folder (owned by its uid) and nothing else writable.
// Names are short: a Unix socket path has 108 bytes, and the vsock device adds "_<port>" for
// guest-initiated connections.
struct VmPaths {
  std::string dir;  // <template dir>/<name>
  std::string api_sock;
  std::string vsock_uds;
  std::string console;
  std::string log;           // the VMM's own stdout/stderr
  std::string snapshot_out;  // where this VM writes a snapshot
};
VmPaths vm_paths(const std::string& dir, const std::string& name);
// The longest socket path the back end makes under `dir` must fit sockaddr_un.
Status check_dir_fits_sockets(const std::string& dir);

// `carapace jail` around one VMM (BackendContext::jail): its own uid/gid, a root holding only
// its binds, new namespaces (network included: the VM has no NIC; Unix sockets in its folder are
// its only way out), /proc with its own processes only (for sparse snapshots), and cgroup limits
// sized from the template.
struct VmJail {
  std::string id;           // names the jail folder and the cgroups carapace/<id>
  std::string chroot_base;  // <template dir>/jails
  uid_t uid = 0;            // also the gid
  uint64_t mem_limit_mib = 0;
  uint64_t pids_max = 0;
  uint32_t cpu_quota_pct = 0;
  uint64_t fsize_mib = 0;
  uint64_t nofile = 0;             // RLIMIT_NOFILE
  std::vector<std::string> binds;  // "PATH:ro", or "PATH" for the VM's folder (writable)
  std::string dir() const { return chroot_base + "/" + id; }
};
// Open files a jailed VMM may hold: its own few dozen, and one per inode its guest keeps looked
// up on its shares (FsDeviceConfig::max_inodes, 65,536, shared by all of the VM's shares).
inline constexpr uint64_t kVmOpenFiles = 65536 + 4096;
// Memory the VMM itself may use on top of the guest's RAM (its own pages, page cache of the
// snapshot it reads or writes).
inline constexpr uint64_t kVmmMemOverheadMib = 128;
// True when `dir` is on a file system whose pages are RAM that reclaim cannot write out (tmpfs,
// ramfs). A snapshot a VMM writes there is charged to its memory cgroup for as long as the file
// lives, on top of the guest's RAM it was copied from.
bool on_memory_filesystem(const std::string& dir);
// The jail of VM `name` of a template: `read_only` (kernel, initrd, rootfs, or the snapshot it
// restores) bound read-only, the VM's folder writable. `tag` keeps ids unique on the host:
// jail ids name host-wide cgroups. `snapshots_in_memory` (on_memory_filesystem of the template
// folder): the memory limit also holds one snapshot of the guest's RAM, which the VMM writes
// for a template build or a fork -- else the write itself would end in an OOM kill.
VmJail vm_jail(const TemplateSpec& spec, const std::string& template_dir, const std::string& tag,
               const std::string& name, const VmPaths& paths,
               const std::vector<std::string>& read_only, uid_t uid, bool snapshots_in_memory);
// `carapace jail <flags> -- <vmm_argv without argv[0]>`.
std::vector<std::string> jailed_argv(const VmJail& jail, const std::string& carapace_exe,
                                     const std::vector<std::string>& vmm_argv);
// Host uids for jailed VMMs, distinct among the daemon's live VMs: [kVmUidBase, +kVmUidSpan),
// next to the process back end's range (process_sandbox/process_sandbox.h).
inline constexpr uid_t kVmUidBase = 260000;
inline constexpr uid_t kVmUidSpan = 60000;
uid_t next_vm_uid();

// Hands out vsock CIDs unique within the process (every template of the daemon shares one):
// from `first` up, wrapping to 3 (0-2 are reserved) before 2^32 - 1.
class CidAllocator {
 public:
  explicit CidAllocator(uint32_t first = 3) : next_(first < 3 ? 3 : first) {}
  uint32_t next();

 private:
  std::atomic<uint32_t> next_;
};

// Every VM of a template has this many virtio-fs devices, unbound (no folder) in the template's
// snapshot: a workspace mount binds one at hand-out (microvm_shares.cpp), as many as the daemon
// allows mounts per sandbox. Their tags are share_tag(0..kShareSlots-1).
inline constexpr size_t kShareSlots = 8;
std::string share_tag(size_t slot);

// `carapace run` for the template's boot VM; `token` goes on the kernel command line as
// `carapace.token=` (the agent's first token; replaced in every instance by post_restore).
// `seccomp` false adds --no-seccomp (the VMM then also needs CARAPACE_ALLOW_NO_SECCOMP=1).
std::vector<std::string> boot_argv(const TemplateSpec& spec, const std::string& carapace_exe,
                                   const VmPaths& paths, uint32_t cid, const std::string& token,
                                   bool seccomp = true);
// `carapace restore --paused` of one instance from `snapshot_dir`, with its own identity.
std::vector<std::string> restore_argv(const TemplateSpec& spec, const std::string& carapace_exe,
                                      const std::string& snapshot_dir, const VmPaths& paths,
                                      uint32_t cid, bool seccomp = true);

// `bytes` random bytes from getrandom, raw or as lower-case hex.
Result<std::string> random_bytes(size_t bytes);
Result<std::string> random_hex(size_t bytes);

// The last `max` bytes of a file, one line (newlines and control bytes shown as spaces), for
// error messages ("console tail: ...").
std::string file_tail(const std::string& path, size_t max = 300);

}  // namespace carapace::service
