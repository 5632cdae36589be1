// The microvm back end (backend.h): a template is a snapshot of a VM whose agent answered; each
// sandbox is a `carapace restore` process of its own. A pool of VMs restored ahead of time, with
// their vCPUs parked (`--paused`: no CPU while they wait), makes a hand-out a resume, a
// post_restore and a ping.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>
#include <thread>

#include "common/base/log.h"
#include "common/base/unique_fd.h"
#include "common/http/http_client.h"
#include "daemon/backends/backend.h"
#include "daemon/backends/microvm/microvm_instance.h"
#include "daemon/backends/microvm/microvm_snapshot_files.h"
#include "daemon/backends/microvm_args.h"
#include "daemon/backends/microvm_process.h"
#include "jailer/jail_config.h"
#include "jailer/jail_fs.h"
#include "jailer/supervisor.h"

namespace carapace::service {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kTokenBytes = 16;
// Pooled VMs that fail their hand-out are replaced; after this many, acquire restores one now.
constexpr int kMaxPooledTries = 3;

CidAllocator& cids() {
  // One allocator for every template of the daemon: CIDs never repeat among live VMs.
  static CidAllocator allocator(3);
  return allocator;
}

// Workspace mounts take the share devices of the template's VMs (microvm_shares.cpp): at most
// kShareSlots, and only with jailed VMMs (the folder is id-mapped into the VM's jail). Checked
// before anything is restored or forked.
Status check_mounts(const InstanceOptions& opts, bool jailed) {
  if (opts.mounts.empty()) return ok_status();
  if (!jailed)
    return as_invalid_input(make_error(
        "mounts on the microvm back end need jailed VMMs (the daemon's config says jail: false)"));
  if (opts.mounts.size() > kShareSlots)
    return as_invalid_input(
        make_error("at most " + std::to_string(kShareSlots) + " mounts on the microvm back end"));
  return ok_status();
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// What VMMs of an earlier run on this folder (a daemon that crashed: its VMMs died with it) left:
// the boot VM's and the instances' folders, fork snapshots, and jails (folders, and cgroups that
// anything still in them is killed with). The snapshot and anything not ours (the daemon's
// template.json) stay.
void remove_stale_vm_files(const std::string& dir) {
  remove_stale_jails(dir + "/jails", "");
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const std::string stem = name.substr(0, name.find('.'));
    const bool vm = stem == "boot" || stem == "reuse" ||
                    (stem.size() > 1 && stem[0] == 'i' &&
                     stem.find_first_not_of("0123456789", 1) == std::string::npos);
    if (vm || name == "forks" || name == "jails") stale.push_back(dir + "/" + name);
  }
  ::closedir(d);
  for (const auto& path : stale)
    (void)remove_tree(path);
}

// A readable tag for jail ids (they name host-wide cgroups): a prefix of the template id and
// random hex, so two daemons, or two tests, never share one.
std::string jail_tag(const std::string& template_id) {
  std::string tag = template_id.substr(0, 20);
  auto rnd = random_hex(4);
  return tag + "-" + (rnd.ok() ? *rnd : std::to_string(::getpid()));
}

// The files a jailed VMM reads must be readable by its uid (it has no capabilities).
Status check_readable_by_jails(const TemplateSpec& spec) {
  for (const auto& [field, path] :
       {std::pair{"kernel", spec.kernel}, {"initrd", spec.initrd}, {"rootfs", spec.rootfs}}) {
    if (path.empty()) continue;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return as_invalid_input(sys_error(std::string(field)));
    if ((st.st_mode & S_IROTH) == 0)
      return as_invalid_input(make_error(std::string(field) + ": " + path +
                                         " must be readable by others (mode o+r): each VMM runs "
                                         "jailed as a uid of its own"));
  }
  return {};
}

class MicrovmTemplate : public TemplateBackend {
 public:
  MicrovmTemplate(TemplateSpec spec, BackendContext ctx)
      : spec_(std::move(spec)),
        ctx_(std::move(ctx)),
        snapshot_dir_(ctx_.dir + "/snapshot"),
        jail_tag_(jail_tag(ctx_.template_id)),
        snapshots_in_memory_(on_memory_filesystem(ctx_.dir)),
        pool_(template_pool_options<MicrovmInstance>(
            spec_.pool_size, ctx_.template_id, [this] { return restore_paused(snapshot_dir_); })) {}
  ~MicrovmTemplate() override { shutdown(); }

  // Reuses a complete snapshot an earlier run left in the folder, else boots and snapshots.
  Status build();
  void start_refill();

  Result<std::unique_ptr<Instance>> acquire(const InstanceOptions& opts, bool* from_pool) override;
  Result<std::vector<std::unique_ptr<Instance>>> fork(Instance& parent, uint32_t count,
                                                      const InstanceOptions& opts) override;
  PoolStats pool_stats() override;
  nlohmann::json describe() const override;
  void shutdown() override;

 private:
  // A VM restored from `snapshot` with a fresh identity, vCPUs parked.
  Result<std::unique_ptr<MicrovmInstance>> restore_paused(const std::string& snapshot,
                                                          const std::string& name = {});
  // Starts `vmm_argv` as VM `name` (jailed when the daemon says so), reading `read_only`.
  Result<std::unique_ptr<MicrovmInstance>> launch(const std::vector<std::string>& vmm_argv,
                                                  const VmPaths& paths, uint32_t cid,
                                                  const std::vector<std::string>& read_only,
                                                  bool paused);
  std::string hostname(const MicrovmInstance& vm) const {
    return ctx_.template_id + "-" + std::to_string(vm.cid());
  }
  Status wait_for_agent(MicrovmInstance& boot);
  // Boots the template's VM, waits for its agent and snapshots it.
  Status boot_and_snapshot();
  // Checks the snapshot in the folder the way a sandbox would use it: one VM restored from it
  // (the VMM's loader checks the state file, the memory file and the CPU) and handed out with the
  // recorded token; that VM is then destroyed.
  Status reuse_snapshot();

  const TemplateSpec spec_;
  const BackendContext ctx_;
  const std::string snapshot_dir_;
  const std::string jail_tag_;
  const bool snapshots_in_memory_;  // the template folder is tmpfs/ramfs (vm_jail)
  std::string token_;               // the snapshot's agent token: only post_restore uses it
  double build_ms_ = 0;
  bool reused_ = false;  // the snapshot came from an earlier run (no boot)
  std::atomic<uint64_t> next_vm_{0};
  std::atomic<uint64_t> next_fork_{0};

  ReadyPool<MicrovmInstance> pool_;  // paused restored VMs; last: its thread uses the above
};

Status MicrovmTemplate::wait_for_agent(MicrovmInstance& boot) {
  const VmPaths& paths = boot.paths();
  const auto deadline = Clock::now() + std::chrono::seconds(spec_.agent_timeout_s);
  std::string last = "no attempt";
  while (Clock::now() < deadline) {
    if (!boot.alive())
      return make_error("boot VM ended before its agent answered: " + boot.exit_description() +
                        "; log: " + file_tail(paths.log) +
                        "; console tail: " + file_tail(paths.console));
    auto client = AgentClient::connect_vsock_uds(paths.vsock_uds, agent::kAgentVsockPort, 1000,
                                                 /*follow_socket_link=*/false);
    if (client.ok()) {
      client->set_io_timeout_ms(2000);
      auto ping = client->ping();
      if (ping.ok()) return {};
      last = ping.error().describe();
    } else {
      last = client.error().describe();
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  return make_error("agent did not answer within " + std::to_string(spec_.agent_timeout_s) +
                    " s (" + last + "); console tail: " + file_tail(paths.console));
}

Status MicrovmTemplate::build() {
  const auto t0 = Clock::now();
  remove_stale_vm_files(ctx_.dir);
  struct stat st {};
  if (::lstat(snapshot_dir_.c_str(), &st) == 0) {
    Status s = reuse_snapshot();
    if (s.ok()) {
      reused_ = true;
      build_ms_ = ms_since(t0);
      LOG_INFO("template %s: reused the snapshot in %s (%.0f ms)", ctx_.template_id.c_str(),
               snapshot_dir_.c_str(), build_ms_);
      return {};
    }
    LOG_WARN(
        "template %s: the snapshot in %s cannot be reused (%s); removing it and building "
        "the template again",
        ctx_.template_id.c_str(), snapshot_dir_.c_str(), s.error().describe().c_str());
    (void)remove_tree(snapshot_dir_);
    remove_stale_vm_files(ctx_.dir);
  }
  TRY_STATUS(boot_and_snapshot());
  build_ms_ = ms_since(t0);
  return {};
}

Status MicrovmTemplate::reuse_snapshot() {
  struct stat st {};
  if (::lstat(snapshot_dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return make_error(snapshot_dir_ + " is not a folder");
  const std::string state = snapshot_dir_ + "/state";
  if (::lstat(state.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return make_error("no state file (an unfinished snapshot)");
  token_ = TRY(read_agent_token(snapshot_dir_));
  // An earlier run may have left it for VMMs as root (jail off): owners and modes are set anew.
  TRY_STATUS(seal_snapshot_dir(snapshot_dir_, ctx_.jail));
  auto vm = TRY(restore_paused(snapshot_dir_, "reuse"));
  Status s = vm->hand_out(token_, ctx_.template_id + "-reuse", ctx_.hand_out_timeout);
  vm->destroy();
  if (!s.ok()) return make_error("trial restore: " + s.error().describe());
  return {};
}

Status MicrovmTemplate::boot_and_snapshot() {
  token_ = TRY(random_hex(kTokenBytes));
  const VmPaths paths = vm_paths(ctx_.dir, "boot");
  const uint32_t cid = cids().next();
  auto boot = launch(boot_argv(spec_, ctx_.carapace_exe, paths, cid, token_, ctx_.seccomp), paths,
                     cid, {spec_.kernel, spec_.initrd, spec_.rootfs}, /*paused=*/false);
  if (!boot.ok()) return make_error("template build: starting the VMM: " + boot.error().describe());
  if (Status s = wait_for_agent(**boot); !s.ok())
    return make_error("template build: " + s.error().describe());
  // The VMM writes the snapshot in its own folder (the only place a jailed VMM can write); once
  // it has stopped, the folder moves out into the template's, owned by the daemon.
  if (Status s = (*boot)->snapshot(paths.snapshot_out, /*resume_after=*/false); !s.ok())
    return make_error("template build: " + s.error().describe());
  (*boot)->stop_vmm();
  (void)remove_tree(snapshot_dir_);
  Status adopted = adopt_snapshot_dir(paths.snapshot_out, snapshot_dir_, ctx_.jail);
  boot->reset();
  if (!adopted.ok()) return make_error("template build: " + adopted.error().describe());
  if (Status s = write_agent_token(snapshot_dir_, token_); !s.ok()) {
    (void)remove_tree(snapshot_dir_);
    return make_error("template build: " + s.error().describe());
  }
  return {};
}

void MicrovmTemplate::start_refill() {
  pool_.start();
}

Result<std::unique_ptr<MicrovmInstance>> MicrovmTemplate::launch(
    const std::vector<std::string>& vmm_argv, const VmPaths& paths, uint32_t cid,
    const std::vector<std::string>& read_only, bool paused) {
  std::optional<VmJail> jail;
  if (ctx_.jail) {
    const std::string name = paths.dir.substr(paths.dir.rfind('/') + 1);
    jail = vm_jail(spec_, ctx_.dir, jail_tag_, name, paths, read_only, next_vm_uid(),
                   snapshots_in_memory_);
  }
  return MicrovmInstance::launch(vmm_argv, paths, cid, jail, paused, ctx_.vm_start_timeout);
}

Result<std::unique_ptr<MicrovmInstance>> MicrovmTemplate::restore_paused(
    const std::string& snapshot, const std::string& name) {
  const VmPaths paths = vm_paths(ctx_.dir, name.empty() ? "i" + std::to_string(next_vm_++) : name);
  const uint32_t cid = cids().next();
  auto vm = launch(restore_argv(spec_, ctx_.carapace_exe, snapshot, paths, cid, ctx_.seccomp),
                   paths, cid, {snapshot, spec_.rootfs}, /*paused=*/true);
  if (!vm.ok()) return make_error("restore: " + vm.error().describe());
  return vm;
}

Result<std::unique_ptr<Instance>> MicrovmTemplate::acquire(const InstanceOptions& opts,
                                                           bool* from_pool) {
  if (from_pool) *from_pool = false;
  TRY_STATUS(check_mounts(opts, ctx_.jail));
  for (int tries = 0; tries < kMaxPooledTries; ++tries) {
    auto taken = pool_.take();
    if (!taken.ok()) return make_error("template is shutting down");
    std::unique_ptr<MicrovmInstance> vm = std::move(*taken);
    if (vm == nullptr) break;
    // A pooled VM that died or whose agent stays silent is destroyed, never handed out
    // (docs/security.md #31).
    if (!vm->alive()) {
      LOG_WARN("template %s: pooled VM %d was dead (%s); replacing it", ctx_.template_id.c_str(),
               vm->pid(), vm->exit_description().c_str());
      continue;
    }
    if (Status s = vm->hand_out(token_, hostname(*vm), ctx_.hand_out_timeout); !s.ok()) {
      LOG_WARN("template %s: pooled VM %d failed its hand-out: %s", ctx_.template_id.c_str(),
               vm->pid(), s.error().describe().c_str());
      continue;
    }
    pool_.count_hit();
    if (from_pool) *from_pool = true;
    // A mount that fails is the request's (a folder that cannot be id-mapped, a guest path the
    // image refuses), not the pooled VM's: no other VM is tried. This one is destroyed with
    // whatever it had bound.
    TRY_STATUS(vm->bind_mounts(opts.mounts, ctx_.carapace_exe, ctx_.hand_out_timeout));
    return std::unique_ptr<Instance>(std::move(vm));
  }
  pool_.count_miss();
  auto vm = TRY(restore_paused(snapshot_dir_));
  TRY_STATUS(vm->hand_out(token_, hostname(*vm), ctx_.hand_out_timeout));
  TRY_STATUS(vm->bind_mounts(opts.mounts, ctx_.carapace_exe, ctx_.hand_out_timeout));
  return std::unique_ptr<Instance>(std::move(vm));
}

Result<std::vector<std::unique_ptr<Instance>>> MicrovmTemplate::fork(Instance& parent,
                                                                     uint32_t count,
                                                                     const InstanceOptions& opts) {
  TRY_STATUS(check_mounts(opts, ctx_.jail));
  auto* p = dynamic_cast<MicrovmInstance*>(&parent);
  if (p == nullptr)
    return as_invalid_input(make_error("fork: the parent is not a microvm sandbox"));
  if (count == 0) return as_invalid_input(make_error("fork: count must be at least 1"));
  if (!p->alive()) return as_invalid_input(make_error("fork: the parent has ended"));
  if (!p->mounts().empty() && p->paused())
    return as_invalid_input(make_error(
        "fork: a paused sandbox with mounts cannot be forked (its shares are unmounted for the "
        "snapshot by its agent, which does not run while paused); resume it first"));
  const std::string forks = ctx_.dir + "/forks";
  if (::mkdir(forks.c_str(), 0700) != 0 && errno != EEXIST) return sys_error("fork: " + forks);
  const std::string dir = forks + "/" + std::to_string(next_fork_++);
  // The parent's shares are unmounted for the snapshot (their FUSE sessions name host files no
  // snapshot can carry) and mounted again right after it, taken or not.
  TRY_STATUS(p->unmount_shares(ctx_.hand_out_timeout));
  // The parent writes the snapshot in its own folder and runs on afterwards (or stays paused);
  // on failure it is as it was. The folder then moves out of the parent's reach.
  const std::string out = p->paths().snapshot_out;
  Status snap = p->snapshot(out, /*resume_after=*/true);
  if (Status again = p->remount_shares(ctx_.hand_out_timeout); !again.ok())
    LOG_WARN("template %s: fork: the parent's shares did not mount again: %s",
             ctx_.template_id.c_str(), again.error().describe().c_str());
  if (!snap.ok()) {
    (void)remove_tree(out);
    return snap.take_error();
  }
  if (Status s = adopt_snapshot_dir(out, dir, ctx_.jail); !s.ok()) {
    (void)remove_tree(out);
    return make_error("fork: " + s.error().describe());
  }
  std::vector<std::unique_ptr<Instance>> children;
  Status failed;
  for (uint32_t i = 0; i < count && failed.ok(); ++i) {
    auto vm = restore_paused(dir);
    if (!vm.ok()) {
      failed = vm.take_error();
      break;
    }
    children.push_back(std::move(*vm));
  }
  // Each child has mapped the memory file MAP_PRIVATE: the mapping keeps the pages, so the
  // snapshot's files are no longer needed by anyone.
  (void)remove_tree(dir);
  if (!failed.ok()) return make_error("fork: " + failed.error().describe());
  for (auto& child : children) {
    auto& vm = static_cast<MicrovmInstance&>(*child);
    if (Status s = vm.hand_out(p->agent().token, hostname(vm), ctx_.hand_out_timeout); !s.ok())
      return make_error("fork: child " + std::to_string(vm.cid()) + ": " + s.error().describe());
    if (Status s = vm.bind_mounts(opts.mounts, ctx_.carapace_exe, ctx_.hand_out_timeout); !s.ok())
      return make_error("fork: child " + std::to_string(vm.cid()) + ": " + s.error().describe());
  }
  return children;
}

PoolStats MicrovmTemplate::pool_stats() {
  return pool_stats_of(pool_);
}

nlohmann::json MicrovmTemplate::describe() const {
  // "snapshot_reused": the snapshot an earlier run left was checked and reused (build_ms is then
  // that check), else it was built now (boot + agent + snapshot).
  return nlohmann::json{{"build_ms", build_ms_},      {"snapshot", snapshot_dir_},
                        {"snapshot_reused", reused_}, {"vcpus", spec_.vcpus},
                        {"mem_mib", spec_.mem_mib},   {"console_max_bytes", kConsoleMaxBytes}};
}

void MicrovmTemplate::shutdown() {
  pool_.stop().clear();  // each pooled VM kills its VMM and removes its files
}

}  // namespace

Result<std::unique_ptr<TemplateBackend>> create_microvm_backend(const TemplateSpec& spec,
                                                                const BackendContext& ctx) {
  auto bad = [](const std::string& m) { return as_invalid_input(make_error(m)); };
  if (spec.isolation != Isolation::kMicrovm) return bad("microvm back end: wrong isolation");
  if (spec.kernel.empty()) return bad("kernel: required for microvm templates");
  if (spec.vcpus == 0) return bad("vcpus: at least 1");
  if (spec.agent_timeout_s == 0) return bad("agent_timeout_s: at least 1");
  if (ctx.carapace_exe.empty() || ctx.dir.empty())
    return make_error("microvm back end: no carapace binary or state folder");
  TRY_STATUS(check_dir_fits_sockets(ctx.dir));
  if (ctx.jail) {
    if (::geteuid() != 0)
      return make_error(
          "microvm back end: jailing each VMM needs root (or set \"jail\": false in the daemon's "
          "config)");
    TRY_STATUS(check_readable_by_jails(spec));
    // A jail's own /dev, /run, /proc and /sys hide the host's: a VM's folder cannot be bound there.
    for (const char* reserved : {"/dev", "/run", "/proc", "/sys"})
      if (path_within(ctx.dir, reserved))
        return as_invalid_input(make_error(std::string("microvm back end: the state folder ") +
                                           ctx.dir + " is under " + reserved +
                                           ", which a jailed VMM has its own of; use another "
                                           "--state-dir or \"jail\": false"));
  }
  auto t = std::make_unique<MicrovmTemplate>(spec, ctx);
  TRY_STATUS(t->build());
  t->start_refill();
  return std::unique_ptr<TemplateBackend>(std::move(t));
}

}  // namespace carapace::service
