// The seam between the sandbox daemon (`carapace serve`, daemon/) and the isolation back
// ends that run sandboxes: `microvm` (one carapace VMM process per sandbox, restored from a
// template snapshot) and `process` (the guest agent itself in a jail; weaker than a
// microVM). The daemon keeps the registry, TTLs, limits and the HTTP API; a back end turns a
// template into running instances and owns every process, socket and folder it creates.
//
// Every instance exposes the guest agent (common/agent/PROTOCOL.md) somewhere on the host; the
// daemon talks to it with AgentClient for exec, files and documents. The token lives only in the
// daemon and in the agent: it never goes on a command line a sandboxed process could read.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/agent/agent_client.h"
#include "common/base/log.h"
#include "common/base/ready_pool.h"
#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "process_sandbox/share_spec.h"

namespace carapace::service {

enum class Isolation { kMicrovm, kProcess };
const char* isolation_name(Isolation i);  // "microvm" | "process"

// What POST /templates asks for (docs/api.md). Paths are absolute host paths, checked by the
// daemon before a back end sees them.
struct TemplateSpec {
  Isolation isolation = Isolation::kMicrovm;
  std::string kernel;  // microvm: an ELF kernel (our guest kernel, or the test guest)
  std::string initrd;  // microvm: optional
  std::string rootfs;  // microvm: read-only root drive (optional); process: required (ext4 image)
  std::string boot_args;  // microvm: appended to the kernel command line
  uint32_t vcpus = 1;
  uint32_t mem_mib = 256;
  uint32_t pool_size = 2;         // instances kept ready (0: none, every create restores)
  uint32_t agent_timeout_s = 60;  // boot → agent answers ping
};

// Where and how to reach one instance's agent.
struct AgentEndpoint {
  enum class Kind { kUnix, kVsockUds } kind = Kind::kUnix;
  std::string path;   // agent's Unix socket, or the VMM's hybrid vsock socket (port 52)
  std::string token;  // the instance's current token (fresh per instance)
  // False when the socket's folder is writable by the sandbox (a jailed VMM's folder): a link
  // planted there is refused rather than followed by the daemon (common/base/unix_socket_path.h).
  bool follow_socket_link = true;
  Result<AgentClient> connect() const;
};

using MountMode = ShareMode;  // "ro" | "rw" | "rw-nodelete" (share_mode_name)

// A host folder shared into one sandbox (docs/api.md, Mounts), checked by the daemon
// (daemon/core/mounts.h): `dir` is that folder, opened beneath a mount root one component at a
// time without following a link or leaving the file system. A back end mounts `dir` (as
// /proc/self/fd/N of a descriptor it passes), never `host_path` again, so a component swapped for
// a symlink after the check cannot redirect the mount.
struct SandboxMount {
  std::string host_path;                // as asked: for views and messages
  std::shared_ptr<const UniqueFd> dir;  // O_PATH | O_DIRECTORY
  std::string guest_path;
  MountMode mode = MountMode::kRo;
};

// Per-sandbox choices at create time.
struct InstanceOptions {
  uint64_t ttl_s = 0;  // informational for the back end
  // The sandbox's mounts, checked by the daemon; a back end that cannot mount refuses a non-empty
  // list (invalid input) before it starts anything.
  std::vector<SandboxMount> mounts;
};

// Where an instance's egress proxy (daemon/backends/egress_sidecar.h) listens on the host and how
// the instance's agent reaches it. The daemon starts the proxy after the hand-out, so a pooled
// instance needs no policy: the place is there from the instance's start.
struct EgressPlacement {
  std::string listen_path;  // the host path the proxy binds
  // 0600 when the sandbox's side runs as the daemon's user; 0666 when it runs as another user and
  // the folder keeps everyone else out.
  mode_t listen_mode = 0600;
  std::string agent_upstream;  // for the agent's `egress` op: "unix:/PATH" or "vsock:PORT"
};

// One running sandbox's isolation unit. Destroying it kills its processes and removes everything
// it created (sockets, folders, cgroups, taps), also when they already died.
class Instance {
 public:
  virtual ~Instance() = default;
  virtual const AgentEndpoint& agent() const = 0;
  // microvm: the VMM's control API; process: the cgroup freezer. Wrong state → invalid input.
  virtual Status pause() = 0;
  virtual Status resume() = 0;
  virtual bool paused() const = 0;
  // False once its process ended (VMM exit, guest reset, OOM kill). exit_description() then says
  // why, e.g. "vmm exited with status 6 (guest panic)" or "killed by SIGKILL (memory limit)".
  virtual bool alive() = 0;
  virtual std::string exit_description() = 0;
  virtual int pid() const = 0;
  // pid, sockets, console/log file paths, cgroup; shown by GET /sandboxes/{id}. The daemon records
  // it in STATE/sandboxes/<id>.json; after a daemon crash the next run cleans up: whatever still
  // runs in the jail cgroups named under "cgroups" (an array of names below carapace/) is
  // killed and those cgroups go, then the paths listed under "files" (an array; those inside the
  // state dir only) are removed.
  virtual nlohmann::json describe() const = 0;
  // Where its egress proxy goes; invalid input where the back end has no way to carry egress.
  virtual Result<EgressPlacement> egress_placement() const {
    return as_invalid_input(make_error("network: egress is not supported by this back end"));
  }
  // Host-side counters for /metrics (console bytes dropped, egress packets dropped, ...), by name.
  virtual std::map<std::string, uint64_t> counters() = 0;
};

struct PoolStats {
  uint32_t ready = 0;
  uint32_t capacity = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t refill_failures = 0;
};

template <typename T>
PoolStats pool_stats_of(const ReadyPool<T>& pool) {
  const auto s = pool.stats();
  return PoolStats{static_cast<uint32_t>(s.ready), static_cast<uint32_t>(s.capacity), s.hits,
                   s.misses, s.refill_failures};
}

// Removes the jails an earlier run left under `jail_base` (a daemon that crashed or was killed
// while starting them), with any process still in their cgroups (named `cgroup_prefix` + the
// jail's id). A jail whose supervisor still lives (its folder locked) is left alone.
void remove_stale_jails(const std::string& jail_base, const std::string& cgroup_prefix);

// A template's pool: `capacity` instances made by `make`, those that died while waiting
// (killed, crashed) dropped and replaced, refill failures logged with the template's id.
template <typename T>
typename ReadyPool<T>::Options template_pool_options(
    size_t capacity, const std::string& template_id,
    std::function<Result<std::unique_ptr<T>>()> make) {
  typename ReadyPool<T>::Options o;
  o.capacity = capacity;
  o.make = std::move(make);
  o.alive = [](T& instance) { return instance.alive(); };
  o.on_refill_error = [template_id](const Error& e) {
    LOG_WARN("template %s: pool refill: %s", template_id.c_str(), e.describe().c_str());
  };
  return o;
}

// One template: built once (boot + wait for agent + snapshot, or just checks for `process`), then
// a pool of ready instances refilled in the background.
class TemplateBackend {
 public:
  virtual ~TemplateBackend() = default;
  // A running instance whose agent has its fresh token and answered. `from_pool` says whether it
  // came ready from the pool (a hit) or was started now (a miss).
  virtual Result<std::unique_ptr<Instance>> acquire(const InstanceOptions& opts,
                                                    bool* from_pool) = 0;
  // `count` children of a running instance, each with its own identity and token and
  // `opts.mounts` (decided by the daemon: none, the parent's, or a list of their own); the parent
  // keeps running (is left as it was on failure). Back ends that cannot fork say so (invalid
  // input).
  virtual Result<std::vector<std::unique_ptr<Instance>>> fork(Instance& parent, uint32_t count,
                                                              const InstanceOptions& opts) = 0;
  virtual PoolStats pool_stats() = 0;
  // Template build time and anything worth showing in GET /templates/{id}.
  virtual nlohmann::json describe() const = 0;
  // Stops the refill thread and destroys the pooled instances.
  virtual void shutdown() = 0;
};

// Where a back end keeps its files: `dir` is the template's own folder under the state dir
// (created by the daemon, removed with the template).
struct BackendContext {
  std::string template_id;
  std::string dir;
  std::string carapace_exe;  // the carapace binary to spawn (/proc/self/exe resolved)
  std::string agent_exe;     // process back end: the static agent (default: the rootfs's own)
  bool seccomp = true;
  // microvm: run each VMM inside `carapace jail` (its own uid, namespaces, a root holding only
  // its files, cgroup limits from the template). The daemon's default (DaemonConfig::jail).
  bool jail = false;
  // microvm: DaemonConfig::vm_start_timeout_s and hand_out_timeout_s.
  std::chrono::milliseconds vm_start_timeout{10'000};
  std::chrono::milliseconds hand_out_timeout{10'000};
};

// microvm: boots spec.kernel with `carapace run` (test guest: boot_args
// "testguest.run=agent-ping"; the real image: init=/usr/sbin/carapace-agent), waits for the agent,
// snapshots, and keeps pool_size restored VMM processes ready. Implemented in
// daemon/backends/microvm/microvm_backend.cpp.
Result<std::unique_ptr<TemplateBackend>> create_microvm_backend(const TemplateSpec& spec,
                                                                const BackendContext& ctx);
// process: `carapace run --isolation process` instances.
// daemon/backends/process/process_backend.cpp.
Result<std::unique_ptr<TemplateBackend>> create_process_backend(const TemplateSpec& spec,
                                                                const BackendContext& ctx);

}  // namespace carapace::service
