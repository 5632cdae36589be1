// The microvm back end (backend.h): a template is a snapshot of a VM whose agent answered; each
// sandbox is a `carapace restore` process of its own. A pool of VMs restored ahead of time, with
// their vCPUs parked (`--paused`: no CPU while they wait), makes a hand-out a resume, a
// post_restore and a ping.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

#include "vmm/api/http/http_client.h"
#include "vmm/base/log.h"
#include "vmm/base/unique_fd.h"
#include "vmm/service/backend.h"
#include "vmm/service/microvm_args.h"
#include "vmm/service/microvm_instance.h"
#include "vmm/service/microvm_process.h"

namespace carapace::service {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kRestoreTimeout{10'000};
constexpr milliseconds kHandOutTimeout{10'000};
constexpr size_t kTokenBytes = 16;
// Pooled VMs that fail their hand-out are replaced; after this many, acquire restores one now.
constexpr int kMaxPooledTries = 3;

CidAllocator& cids() {
  // One allocator for every template of the daemon: CIDs never repeat among live VMs.
  static CidAllocator allocator(3);
  return allocator;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

// The snapshot's agent token, kept beside the snapshot so that a daemon restarted on the same
// folder can reuse it (post_restore needs it). It tells nothing new to whoever can read the
// folder: the memory file next to it holds the same token. Written last, after the snapshot is
// complete, so its presence marks a finished build.
constexpr char kTokenFile[] = "agent-token";

Status write_token(const std::string& snapshot_dir, const std::string& token) {
  const std::string path = snapshot_dir + "/" + kTokenFile;
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return sys_error("create " + tmp);
  const std::string line = token + "\n";
  if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
      ::fsync(fd.get()) != 0) {
    Error e = sys_error("write " + tmp);
    ::unlink(tmp.c_str());
    return e;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error e = sys_error("rename " + tmp);
    ::unlink(tmp.c_str());
    return e;
  }
  return {};
}

Result<std::string> read_token(const std::string& snapshot_dir) {
  const std::string path = snapshot_dir + "/" + kTokenFile;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return sys_error("open " + path);
  char buf[2 * kTokenBytes + 2];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n < 0) return sys_error("read " + path);
  std::string token(buf, static_cast<size_t>(n));
  if (!token.empty() && token.back() == '\n') token.pop_back();
  if (token.size() != 2 * kTokenBytes ||
      token.find_first_not_of("0123456789abcdef") != std::string::npos)
    return make_error(path + ": not a token");
  return token;
}

// What VMMs of an earlier run on this folder (a daemon that crashed: its VMMs died with it) left:
// the boot VM's and the instances' sockets and files, and fork snapshots. The snapshot and
// anything not ours (the daemon's template.json) stay.
void remove_stale_vm_files(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> stale;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const size_t dot = name.find('.');
    const std::string stem = name.substr(0, dot);
    const bool vm_file = dot != std::string::npos &&
                         (stem == "boot" || stem == "reuse" ||
                          (stem.size() > 1 && stem[0] == 'i' &&
                           stem.find_first_not_of("0123456789", 1) == std::string::npos));
    if (vm_file || name == "forks") stale.push_back(dir + "/" + name);
  }
  ::closedir(d);
  for (const auto& path : stale)
    remove_tree(path);
}

class MicrovmTemplate : public TemplateBackend {
 public:
  MicrovmTemplate(TemplateSpec spec, BackendContext ctx)
      : spec_(std::move(spec)), ctx_(std::move(ctx)), snapshot_dir_(ctx_.dir + "/snapshot") {}
  ~MicrovmTemplate() override { shutdown(); }

  // Reuses a complete snapshot an earlier run left in the folder, else boots and snapshots.
  Status build();
  void start_refill();

  Result<std::unique_ptr<Instance>> acquire(const InstanceOptions& opts, bool* from_pool) override;
  Result<std::vector<std::unique_ptr<Instance>>> fork(Instance& parent, uint32_t count) override;
  PoolStats pool_stats() override;
  nlohmann::json describe() const override;
  void shutdown() override;

 private:
  // A VM restored from `snapshot` with a fresh identity, vCPUs parked.
  Result<std::unique_ptr<MicrovmInstance>> restore_paused(const std::string& snapshot,
                                                          const std::string& name = {});
  std::string hostname(const MicrovmInstance& vm) const {
    return ctx_.template_id + "-" + std::to_string(vm.cid());
  }
  void refill_loop();
  Status wait_for_agent(VmmProcess& boot, const VmPaths& paths);
  // Boots the template's VM, waits for its agent and snapshots it.
  Status boot_and_snapshot();
  // Checks the snapshot in the folder the way a sandbox would use it: one VM restored from it
  // (the VMM's loader checks the state file, the memory file and the CPU) and handed out with the
  // recorded token; that VM is then destroyed.
  Status reuse_snapshot();

  const TemplateSpec spec_;
  const BackendContext ctx_;
  const std::string snapshot_dir_;
  std::string token_;  // the snapshot's agent token: only post_restore uses it
  double build_ms_ = 0;
  bool reused_ = false;  // the snapshot came from an earlier run (no boot)
  std::atomic<uint64_t> next_vm_{0};
  std::atomic<uint64_t> next_fork_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<MicrovmInstance>> ready_;
  bool stopping_ = false;
  uint64_t hits_ = 0, misses_ = 0, refill_failures_ = 0;
  std::thread refill_;
};

Status MicrovmTemplate::wait_for_agent(VmmProcess& boot, const VmPaths& paths) {
  const auto deadline = Clock::now() + std::chrono::seconds(spec_.agent_timeout_s);
  std::string last = "no attempt";
  while (Clock::now() < deadline) {
    if (!boot.alive())
      return make_error("boot VM ended before its agent answered: " + boot.describe_exit() +
                        "; log: " + file_tail(paths.log) +
                        "; console tail: " + file_tail(paths.console));
    auto client = AgentClient::connect_vsock_uds(paths.vsock_uds, agent::kAgentVsockPort, 1000);
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
    remove_tree(snapshot_dir_);
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
  token_ = TRY(read_token(snapshot_dir_));
  auto vm = TRY(restore_paused(snapshot_dir_, "reuse"));
  Status s = vm->hand_out(token_, ctx_.template_id + "-reuse", kHandOutTimeout);
  vm->destroy();
  if (!s.ok()) return make_error("trial restore: " + s.error().describe());
  return {};
}

Status MicrovmTemplate::boot_and_snapshot() {
  token_ = TRY(random_hex(kTokenBytes));
  const VmPaths paths = vm_paths(ctx_.dir, "boot");
  auto boot = VmmProcess::spawn(
      boot_argv(spec_, ctx_.carapace_exe, paths, cids().next(), token_, ctx_.seccomp), paths.log);
  auto cleanup = [&] {
    if (boot.ok()) boot->kill();
    for (const auto& f : paths.all())
      ::unlink(f.c_str());
  };
  if (!boot.ok()) {
    cleanup();
    return make_error("template build: starting the VMM: " + boot.error().describe());
  }
  if (Status s = wait_for_agent(*boot, paths); !s.ok()) {
    cleanup();
    return make_error("template build: " + s.error().describe());
  }
  nlohmann::json body{{"dir", snapshot_dir_}, {"resume", false}};
  http::ClientOptions options;
  options.timeout = std::chrono::seconds(120);
  auto r = http::http_request(paths.api_sock, "PUT", "/snapshot/create", body.dump(), {}, options);
  if (!r.ok() || r->status != 200) {
    std::string why = r.ok() ? "HTTP " + std::to_string(r->status) + " " + r->body.substr(0, 200)
                             : r.error().describe();
    for (char& c : why)
      if (c == '\n') c = ' ';
    cleanup();
    remove_tree(snapshot_dir_);
    return make_error("template build: snapshot: " + why);
  }
  // The snapshot is complete (written atomically): the boot VM has nothing left to do.
  cleanup();
  if (Status s = write_token(snapshot_dir_, token_); !s.ok()) {
    remove_tree(snapshot_dir_);
    return make_error("template build: " + s.error().describe());
  }
  return {};
}

void MicrovmTemplate::start_refill() {
  if (spec_.pool_size > 0) refill_ = std::thread([this] { refill_loop(); });
}

Result<std::unique_ptr<MicrovmInstance>> MicrovmTemplate::restore_paused(
    const std::string& snapshot, const std::string& name) {
  const VmPaths paths = vm_paths(ctx_.dir, name.empty() ? "i" + std::to_string(next_vm_++) : name);
  const uint32_t cid = cids().next();
  return MicrovmInstance::start_paused(
      restore_argv(spec_, ctx_.carapace_exe, snapshot, paths, cid, ctx_.seccomp), paths, cid,
      kRestoreTimeout);
}

void MicrovmTemplate::refill_loop() {
  milliseconds backoff{0};
  std::unique_lock lock(mu_);
  while (!stopping_) {
    // Pooled VMs that died while waiting (killed, crashed) are dropped and replaced.
    std::erase_if(ready_, [](auto& vm) { return !vm->alive(); });
    if (ready_.size() >= spec_.pool_size || backoff.count() > 0) {
      cv_.wait_for(lock, backoff.count() > 0 ? backoff : milliseconds(1000));
      backoff = milliseconds(0);
      continue;
    }
    lock.unlock();
    auto vm = restore_paused(snapshot_dir_);
    lock.lock();
    if (!vm.ok()) {
      ++refill_failures_;
      LOG_WARN("template %s: pool refill: %s", ctx_.template_id.c_str(),
               vm.error().describe().c_str());
      backoff = milliseconds(1000);
      continue;
    }
    if (stopping_) break;  // the VM is destroyed as it goes out of scope
    ready_.push_back(std::move(*vm));
  }
}

Result<std::unique_ptr<Instance>> MicrovmTemplate::acquire(const InstanceOptions&,
                                                           bool* from_pool) {
  if (from_pool) *from_pool = false;
  for (int tries = 0; tries < kMaxPooledTries; ++tries) {
    std::unique_ptr<MicrovmInstance> vm;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return make_error("template is shutting down");
      if (ready_.empty()) break;
      vm = std::move(ready_.front());
      ready_.pop_front();
    }
    cv_.notify_all();  // the refill thread starts on a replacement now
    // A pooled VM that died or whose agent stays silent is destroyed, never handed out
    // (SECURITY-CHECKS 31).
    if (!vm->alive()) {
      LOG_WARN("template %s: pooled VM %d was dead (%s); replacing it", ctx_.template_id.c_str(),
               vm->pid(), vm->exit_description().c_str());
      continue;
    }
    if (Status s = vm->hand_out(token_, hostname(*vm), kHandOutTimeout); !s.ok()) {
      LOG_WARN("template %s: pooled VM %d failed its hand-out: %s", ctx_.template_id.c_str(),
               vm->pid(), s.error().describe().c_str());
      continue;
    }
    {
      std::lock_guard lock(mu_);
      ++hits_;
    }
    if (from_pool) *from_pool = true;
    return std::unique_ptr<Instance>(std::move(vm));
  }
  {
    std::lock_guard lock(mu_);
    ++misses_;
  }
  auto vm = TRY(restore_paused(snapshot_dir_));
  TRY_STATUS(vm->hand_out(token_, hostname(*vm), kHandOutTimeout));
  return std::unique_ptr<Instance>(std::move(vm));
}

Result<std::vector<std::unique_ptr<Instance>>> MicrovmTemplate::fork(Instance& parent,
                                                                     uint32_t count) {
  auto* p = dynamic_cast<MicrovmInstance*>(&parent);
  if (p == nullptr)
    return as_invalid_input(make_error("fork: the parent is not a microvm sandbox"));
  if (count == 0) return as_invalid_input(make_error("fork: count must be at least 1"));
  if (!p->alive()) return as_invalid_input(make_error("fork: the parent has ended"));
  const std::string forks = ctx_.dir + "/forks";
  if (::mkdir(forks.c_str(), 0700) != 0 && errno != EEXIST) return sys_error("fork: " + forks);
  const std::string dir = forks + "/" + std::to_string(next_fork_++);
  // The parent runs on afterwards (or stays paused); on failure it is as it was.
  if (Status s = p->snapshot(dir); !s.ok()) {
    remove_tree(dir);
    return s.take_error();
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
  remove_tree(dir);
  if (!failed.ok()) return make_error("fork: " + failed.error().describe());
  for (auto& child : children) {
    auto& vm = static_cast<MicrovmInstance&>(*child);
    if (Status s = vm.hand_out(p->agent().token, hostname(vm), kHandOutTimeout); !s.ok())
      return make_error("fork: child " + std::to_string(vm.cid()) + ": " + s.error().describe());
  }
  return children;
}

PoolStats MicrovmTemplate::pool_stats() {
  std::lock_guard lock(mu_);
  PoolStats s;
  s.ready = static_cast<uint32_t>(ready_.size());
  s.capacity = spec_.pool_size;
  s.hits = hits_;
  s.misses = misses_;
  s.refill_failures = refill_failures_;
  return s;
}

nlohmann::json MicrovmTemplate::describe() const {
  // "snapshot_reused": the snapshot an earlier run left was checked and reused (build_ms is then
  // that check), else it was built now (boot + agent + snapshot).
  return nlohmann::json{{"build_ms", build_ms_},      {"snapshot", snapshot_dir_},
                        {"snapshot_reused", reused_}, {"vcpus", spec_.vcpus},
                        {"mem_mib", spec_.mem_mib},   {"console_max_bytes", kConsoleMaxBytes}};
}

void MicrovmTemplate::shutdown() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (refill_.joinable()) refill_.join();
  std::deque<std::unique_ptr<MicrovmInstance>> pooled;
  {
    std::lock_guard lock(mu_);
    pooled.swap(ready_);
  }
  pooled.clear();  // each kills its VMM and removes its files
}

}  // namespace

Result<std::unique_ptr<TemplateBackend>> create_microvm_backend(const TemplateSpec& spec,
                                                                const BackendContext& ctx) {
  auto bad = [](const std::string& m) { return as_invalid_input(make_error(m)); };
  if (spec.isolation != Isolation::kMicrovm) return bad("microvm back end: wrong isolation");
  if (spec.kernel.empty()) return bad("kernel: required for microvm templates");
  if (spec.vcpus == 0) return bad("vcpus: at least 1");
  if (spec.agent_timeout_s == 0) return bad("agent_timeout_s: at least 1");
  if (spec.network)
    return bad("network: not supported by the microvm back end yet (templates have no NIC)");
  if (ctx.carapace_exe.empty() || ctx.dir.empty())
    return make_error("microvm back end: no carapace binary or state folder");
  TRY_STATUS(check_dir_fits_sockets(ctx.dir));
  auto t = std::make_unique<MicrovmTemplate>(spec, ctx);
  TRY_STATUS(t->build());
  t->start_refill();
  return std::unique_ptr<TemplateBackend>(std::move(t));
}

}  // namespace carapace::service
