// The process back end (backend.h): each sandbox is a `carapace run --isolation
// process` child of the daemon — the guest agent itself in a jail on the host kernel
// (process_sandbox/process_sandbox.h). WEAKER THAN A MICROVM: the workload shares the host kernel.
// A template is only checks (and one trial instance); a pool of started instances whose agent
// answered makes a hand-out a ping. Pause and resume freeze the sandbox's cgroup (v2
// cgroup.freeze). Each instance gets a fresh random token, written to a 0600 file that the
// supervisor reads before it starts anything and that is removed once the agent answered.
// A sandbox with workspace mounts never comes from the pool: it is started for its create, with
// its folders passed as descriptors (`--mount host=/proc/self/fd/N,...`, process_sandbox/
// share_mounts.h), so the mounts exist before its agent runs.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <mutex>
#include <thread>

#include "common/base/log.h"
#include "common/base/unique_fd.h"
#include "daemon/backends/backend.h"
#include "daemon/backends/microvm_args.h"
#include "daemon/backends/microvm_process.h"
#include "jailer/cgroup.h"
#include "jailer/jail_fs.h"
#include "jailer/supervisor.h"
#include "process_sandbox/process_sandbox.h"

namespace carapace::service {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kTokenBytes = 16;
constexpr int kStopTimeoutMs = 10'000;
constexpr uint64_t kPidsMax = 1024;
constexpr int kMaxPooledTries = 3;
constexpr char kWeaker[] =
    "process isolation is weaker than a microVM: the workload shares the host kernel "
    "(namespaces, seccomp and cgroups are its only walls)";

Error bad(const std::string& m) {
  return as_invalid_input(make_error(m));
}

// Host uids for sandboxes, unique among the daemon's live instances (every template shares it).
// Each daemon starts at its own offset, so two daemons on one host rarely hand out the same uid.
uid_t next_sandbox_uid() {
  static std::atomic<uint32_t> next{static_cast<uint32_t>(::getpid()) * 7919u};
  return kDerivedUidBase + next.fetch_add(1) % kDerivedUidSpan;
}

// "vmm exited with status N (...)" (VmmProcess::describe_exit) → N; -1 for anything else.
int exit_status_in(const std::string& d) {
  constexpr char kPrefix[] = "vmm exited with status ";
  if (d.rfind(kPrefix, 0) != 0) return -1;
  return std::atoi(d.c_str() + sizeof kPrefix - 1);
}

// The supervisor's own reason ("carapace run --isolation process: error: WHY") from the end of
// its log, so a refused mount reaches the API as the line it printed; "" when there is none.
std::string supervisor_error(const std::string& log) {
  UniqueFd fd(::open(log.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return "";
  char buf[2048];
  const off_t size = ::lseek(fd.get(), 0, SEEK_END);
  const off_t from =
      size > static_cast<off_t>(sizeof buf) ? size - static_cast<off_t>(sizeof buf) : 0;
  const ssize_t n = ::pread(fd.get(), buf, sizeof buf, from);
  if (n <= 0) return "";
  const std::string text(buf, static_cast<size_t>(n));
  constexpr char kMarker[] = "--isolation process: error: ";
  const size_t at = text.rfind(kMarker);
  if (at == std::string::npos) return "";
  std::string line = text.substr(at + sizeof kMarker - 1);
  line = line.substr(0, line.find('\n'));
  for (char& c : line)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return line;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

Status write_token_file(const std::string& path, const std::string& token) {
  ::unlink(path.c_str());
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return sys_error("create " + path);
  const std::string line = token + "\n";
  if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    return sys_error("write " + path);
  return ok_status();
}

struct InstancePaths {
  std::string name;  // the sandbox id: <template>-<n>
  std::string sock, token, log, jail_base;
};

class ProcessInstance : public Instance {
 public:
  ProcessInstance(VmmProcess p, InstancePaths paths, std::string token, uid_t uid,
                  std::vector<SandboxMount> mounts)
      : process_(std::move(p)), paths_(std::move(paths)), uid_(uid), mounts_(std::move(mounts)) {
    agent_.kind = AgentEndpoint::Kind::kUnix;
    agent_.path = paths_.sock;
    agent_.token = std::move(token);
  }
  ~ProcessInstance() override { destroy(); }

  // Pings with the token until the agent answers with it set, or the supervisor ends.
  Status wait_ready(milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    std::string last = "no attempt";
    while (Clock::now() < deadline) {
      if (!process_.alive()) {
        // Exit status 2 is the supervisor refusing its input (a mount that cannot be made): the
        // caller's to fix, and said in the supervisor's words.
        const std::string why = supervisor_error(paths_.log);
        Error e = make_error("sandbox ended before its agent answered: " +
                             (why.empty() ? exit_description() : why));
        if (exit_status_in(process_.describe_exit()) == 2) e = as_invalid_input(std::move(e));
        return e;
      }
      auto c = agent_.connect();
      if (c.ok()) {
        c->set_io_timeout_ms(2000);
        auto p = c->ping();
        if (p.ok() && p->token_set) {
          ::unlink(paths_.token.c_str());
          return ok_status();
        }
        last = p.ok() ? "agent has no token" : p.error().describe();
      } else {
        last = c.error().describe();
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    return make_error("agent did not answer within " + std::to_string(timeout.count()) + " ms (" +
                      last + "); log: " + file_tail(paths_.log));
  }

  const AgentEndpoint& agent() const override { return agent_; }
  Status pause() override { return set_frozen(true); }
  Status resume() override { return set_frozen(false); }
  bool paused() const override { return paused_; }
  bool alive() override { return process_.alive(); }
  std::string exit_description() override {
    std::string d = process_.describe_exit();
    if (d == "running") return d;
    // The supervisor exits with the agent's status (128+N for signal N) and logs an OOM kill.
    const std::string log = file_tail(paths_.log, 600);
    std::string why = d;
    if (const int code = exit_status_in(d); code >= 0) {
      if (code > 128 && code < 128 + 65) {
        const char* abbrev = ::sigabbrev_np(code - 128);
        why = std::string("agent killed by SIG") + (abbrev ? abbrev : "?");
      } else {
        why = "sandbox exited with status " + std::to_string(code);
      }
    } else {
      why = "sandbox supervisor " + d.substr(d.find(' ') + 1);
    }
    if (log.find("memory limit of") != std::string::npos) why += " (memory limit)";
    return why;
  }
  int pid() const override { return process_.pid(); }
  nlohmann::json describe() const override {
    nlohmann::json mounts = nlohmann::json::array();
    for (const SandboxMount& m : mounts_)
      mounts.push_back(
          {{"guest_path", m.guest_path},
           {"mode", share_mode_name(m.mode)},
           {"enforced_by", m.mode == MountMode::kRwNoDelete ? "idmapped bind mount + Landlock"
                                                            : "idmapped bind mount"}});
    return nlohmann::json{{"pid", process_.pid()},
                          {"isolation", "process"},
                          {"warning", kWeaker},
                          {"agent_sock", paths_.sock},
                          {"log", paths_.log},
                          {"jail", paths_.jail_base + "/" + paths_.name},
                          {"cgroup", "carapace/process-" + paths_.name},
                          {"host_uid", uid_},
                          {"paused", paused_},
                          {"mounts", mounts},
                          // For the daemon's crash recovery (backend.h): the files all inside
                          // ctx.dir, and the jail's cgroups.
                          {"cgroups", nlohmann::json::array({"process-" + paths_.name})},
                          {"files", nlohmann::json::array({paths_.sock, paths_.token, paths_.log,
                                                           paths_.jail_base + "/" + paths_.name})}};
  }
  std::map<std::string, uint64_t> counters() override { return {}; }
  // The jail's egress folder, root's and read-only inside (process_sandbox.h): the sandbox's
  // user connects to the socket there but can neither replace it nor plant a link.
  Result<EgressPlacement> egress_placement() const override {
    return EgressPlacement{paths_.jail_base + "/" + paths_.name + "/egress/proxy.sock", 0666,
                           std::string("unix:") + kEgressDirInside + "/proxy.sock"};
  }

  // SIGTERM to the supervisor, which kills the sandbox and removes its jail folder, cgroups and
  // socket link; SIGKILL after a while, then the same removal from here. Idempotent.
  void destroy() {
    if (destroyed_) return;
    destroyed_ = true;
    if (process_.alive()) {
      if (paused_) (void)set_frozen(false);
      ::kill(process_.pid(), SIGTERM);  // our unreaped child: the pid cannot be reused
      if (!process_.wait_exit(kStopTimeoutMs)) {
        LOG_WARN("process sandbox %s: supervisor did not stop; killing it", paths_.name.c_str());
        process_.kill();
      }
    }
    remove_leftovers();
    for (const std::string& f : {paths_.sock, paths_.token, paths_.log})
      ::unlink(f.c_str());
  }

 private:
  // What a supervisor that died without cleaning up leaves: the jail folder and empty cgroups.
  void remove_leftovers() {
    // The supervisor is reaped (destroy()); its init may still hold the folder's lock.
    if (Status s = remove_jail_leftovers(paths_.jail_base, paths_.name, "process-" + paths_.name,
                                         JailLeftovers::kSupervisorGone);
        !s.ok())
      LOG_WARN("process sandbox %s: %s", paths_.name.c_str(), s.error().describe().c_str());
  }

  Status set_frozen(bool frozen) {
    if (frozen == paused_)
      return bad(frozen ? "sandbox is already paused" : "sandbox is not paused");
    if (!process_.alive()) return bad("sandbox has ended");
    auto mounts = TRY(detect_cgroup_mounts());
    if (mounts.unified.empty())
      return make_error("pause needs the cgroup v2 freezer (no unified cgroup tree mounted)");
    const std::string path = mounts.unified + "/carapace/process-" + paths_.name + "/cgroup.freeze";
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd.valid()) return sys_error("open " + path);
    if (::write(fd.get(), frozen ? "1" : "0", 1) != 1) return sys_error("write " + path);
    paused_ = frozen;
    return ok_status();
  }

  VmmProcess process_;
  InstancePaths paths_;
  uid_t uid_;
  std::vector<SandboxMount> mounts_;  // their folders stay open as long as the sandbox runs
  AgentEndpoint agent_;
  bool paused_ = false;
  bool destroyed_ = false;
};

class ProcessTemplate : public TemplateBackend {
 public:
  ProcessTemplate(TemplateSpec spec, BackendContext ctx)
      : spec_(std::move(spec)),
        ctx_(std::move(ctx)),
        jail_base_(ctx_.dir + "/jails"),
        pool_(template_pool_options<ProcessInstance>(spec_.pool_size, ctx_.template_id,
                                                     [this] { return start({}); })) {}
  ~ProcessTemplate() override { shutdown(); }

  // Starts one sandbox to prove the template works; it becomes the first pooled one.
  Status build() {
    const auto t0 = Clock::now();
    // What sandboxes of an earlier run on this folder left with no record to clean them up by.
    remove_stale_jails(jail_base_, "process-");
    auto first = start({});
    if (!first.ok()) return make_error("template build: " + first.error().describe());
    build_ms_ = ms_since(t0);
    pool_.add(std::move(*first));  // destroyed there when there is no pool
    pool_.start();
    return ok_status();
  }

  Result<std::unique_ptr<Instance>> acquire(const InstanceOptions& opts, bool* from_pool) override {
    if (from_pool) *from_pool = false;
    // Pooled sandboxes have no mounts, and a mount cannot be added to a running one from outside
    // its mount namespace without more machinery than a fresh start: one with mounts starts now
    // (neither a hit nor a miss of the pool).
    if (!opts.mounts.empty()) return std::unique_ptr<Instance>(TRY(start(opts.mounts)));
    for (int tries = 0; tries < kMaxPooledTries; ++tries) {
      auto taken = pool_.take();
      if (!taken.ok()) return make_error("template is shutting down");
      std::unique_ptr<ProcessInstance> sb = std::move(*taken);
      if (sb == nullptr) break;
      // A pooled sandbox that died or whose agent stays silent is destroyed, never handed out.
      if (!sb->alive() || !sb->wait_ready(milliseconds(2000)).ok()) {
        LOG_WARN("template %s: pooled sandbox %d unusable (%s); replacing it",
                 ctx_.template_id.c_str(), sb->pid(), sb->exit_description().c_str());
        continue;
      }
      pool_.count_hit();
      if (from_pool) *from_pool = true;
      return std::unique_ptr<Instance>(std::move(sb));
    }
    pool_.count_miss();
    return std::unique_ptr<Instance>(TRY(start({})));
  }

  Result<std::vector<std::unique_ptr<Instance>>> fork(Instance&, uint32_t,
                                                      const InstanceOptions&) override {
    return bad("fork needs isolation microvm");
  }

  PoolStats pool_stats() override { return pool_stats_of(pool_); }

  nlohmann::json describe() const override {
    return nlohmann::json{{"build_ms", build_ms_},
                          {"rootfs", spec_.rootfs},
                          {"mem_mib", spec_.mem_mib},
                          {"isolation", "process"},
                          {"warning", kWeaker}};
  }

  void shutdown() override { pool_.stop().clear(); }

 private:
  Result<std::unique_ptr<ProcessInstance>> start(const std::vector<SandboxMount>& mounts) {
    InstancePaths p;
    // The sandbox id names its jail folder and cgroups: [A-Za-z0-9-] only, at most 64.
    p.name = ctx_.template_id.substr(0, 40) + "-" + std::to_string(next_++);
    for (char& c : p.name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '-';
    p.sock = ctx_.dir + "/" + p.name + ".sock";
    p.token = ctx_.dir + "/" + p.name + ".token";
    p.log = ctx_.dir + "/" + p.name + ".log";
    p.jail_base = jail_base_;
    const std::string token = TRY(random_hex(kTokenBytes));
    TRY_STATUS(write_token_file(p.token, token));
    const uid_t uid = next_sandbox_uid();
    std::vector<std::string> argv = {ctx_.carapace_exe,
                                     "run",
                                     "--isolation",
                                     "process",
                                     "--rootfs",
                                     spec_.rootfs,
                                     "--agent-sock",
                                     p.sock,
                                     "--id",
                                     p.name,
                                     "--token-file",
                                     p.token,
                                     "--chroot-base",
                                     jail_base_,
                                     "--uid",
                                     std::to_string(uid),
                                     "--pids-max",
                                     std::to_string(kPidsMax)};
    if (spec_.mem_mib > 0) argv.insert(argv.end(), {"--mem-limit", std::to_string(spec_.mem_mib)});
    if (spec_.vcpus > 0)
      argv.insert(argv.end(), {"--cpu-quota", std::to_string(spec_.vcpus * 100)});
    if (!ctx_.agent_exe.empty()) argv.insert(argv.end(), {"--agent", ctx_.agent_exe});
    // Each folder as the descriptor the daemon checked (3 + i in the supervisor), never its path.
    std::vector<int> pass_fds;
    for (const SandboxMount& m : mounts) {
      if (!m.dir || !m.dir->valid()) return make_error("mount " + m.guest_path + ": no folder");
      const int fd = 3 + static_cast<int>(pass_fds.size());
      argv.insert(argv.end(), {"--mount", "host=/proc/self/fd/" + std::to_string(fd) + ",guest=" +
                                              m.guest_path + ",mode=" + share_mode_name(m.mode)});
      pass_fds.push_back(m.dir->get());
    }
    auto proc = VmmProcess::spawn(argv, p.log, pass_fds);
    if (!proc.ok()) {
      ::unlink(p.token.c_str());
      return make_error("starting the sandbox: " + proc.error().describe());
    }
    auto sb = std::make_unique<ProcessInstance>(std::move(*proc), p, token, uid, mounts);
    TRY_STATUS(sb->wait_ready(std::chrono::seconds(spec_.agent_timeout_s)));
    return sb;
  }

  const TemplateSpec spec_;
  const BackendContext ctx_;
  const std::string jail_base_;
  double build_ms_ = 0;
  std::atomic<uint64_t> next_{0};

  ReadyPool<ProcessInstance> pool_;  // last: its refill thread uses the members above
};

}  // namespace

Result<std::unique_ptr<TemplateBackend>> create_process_backend(const TemplateSpec& spec,
                                                                const BackendContext& ctx) {
  if (spec.isolation != Isolation::kProcess) return bad("process back end: wrong isolation");
  if (spec.rootfs.empty()) return bad("rootfs: required for process templates (an ext4 image)");
  if (!spec.kernel.empty() || !spec.initrd.empty() || !spec.boot_args.empty())
    return bad("kernel, initrd, boot_args: not used by process templates");
  if (spec.agent_timeout_s == 0) return bad("agent_timeout_s: at least 1");
  if (spec.mem_mib != 0 && spec.mem_mib < 16) return bad("mem_mib: at least 16");
  struct stat st {};
  if (::stat(spec.rootfs.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return bad("rootfs: " + spec.rootfs + " is not a regular file");
  if (ctx.carapace_exe.empty() || ctx.dir.empty())
    return make_error("process back end: no carapace binary or state folder");
  if (::geteuid() != 0)
    return make_error("process back end: the daemon must run as root (loop mount, namespaces)");
  TRY_STATUS(check_dir_fits_sockets(ctx.dir));
  auto t = std::make_unique<ProcessTemplate>(spec, ctx);
  TRY_STATUS(t->build());
  return std::unique_ptr<TemplateBackend>(std::move(t));
}

}  // namespace carapace::service
