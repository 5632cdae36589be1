#include "vmm/cli/restore_command.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "common/base/event_fd.h"
#include "common/base/log.h"
#include "common/base/unique_fd.h"
#include "snapshot/machine_snapshot.h"
#include "vmm/cli/process_limits.h"
#include "vmm/cli/restore_args.h"
#include "vmm/cli/run_args.h"
#include "vmm/control/machine_control.h"
#include "vmm/control/vm_api.h"
#include "vmm/machine/deferred_teardown.h"
#include "vmm/machine/exit_status.h"
#include "vmm/pool/restore_notice.h"
#include "vmm/security/seccomp.h"

namespace carapace {

namespace {

int fail(const Error& e, const std::string& prefix = "") {
  fprintf(stderr, "carapace: error: %s%s\n", prefix.c_str(), e.describe().c_str());
  return e.kind == ErrorKind::kInvalidInput ? kExitUsage : kExitHostError;
}

// Copies one clone's console (a pipe) to stdout line by line, each line prefixed with the clone,
// so concurrent clones never interleave within a line. The pipe does not end when the VM does
// (the console sink keeps its fd until the Machine goes), so finish() tells the copier to drain
// what is left and stop; by then Machine::wait() has flushed the console.
class LinePrefixer {
 public:
  static Result<std::unique_ptr<LinePrefixer>> create(uint32_t clone, std::mutex* out_mu) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return sys_error("console pipe");
    UniqueFd r(fds[0]), w(fds[1]);
    if (::fcntl(r.get(), F_SETFL, O_NONBLOCK) != 0) return sys_error("console pipe");
    auto stop = TRY(EventFd::create(EFD_CLOEXEC));
    std::unique_ptr<LinePrefixer> p(new LinePrefixer(std::move(r), std::move(w), std::move(stop)));
    p->prefix_ = "[clone " + std::to_string(clone) + "] ";
    p->out_mu_ = out_mu;
    return p;
  }
  ~LinePrefixer() { finish(); }
  // What the console sink opens: the VMM writes through its own fd to the same pipe.
  std::string sink_path() const { return "/proc/self/fd/" + std::to_string(write_.get()); }
  // After the sink has opened its own fd.
  void start() {
    write_.reset();
    thread_ = std::thread([this] { pump(); });
  }
  void finish() {
    if (!thread_.joinable()) return;
    (void)stop_.write();
    thread_.join();
  }

 private:
  LinePrefixer(UniqueFd r, UniqueFd w, EventFd stop)
      : read_(std::move(r)), write_(std::move(w)), stop_(std::move(stop)) {}
  void pump() {
    for (;;) {
      pollfd fds[2] = {{read_.get(), POLLIN, 0}, {stop_.fd(), POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
      bool stopping = fds[1].revents != 0;
      if (!drain() || stopping) break;
    }
    (void)drain();
    if (!line_.empty()) {
      line_.push_back('\n');
      emit();
    }
  }
  // Reads what the pipe holds now; false at EOF or on an error.
  bool drain() {
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(read_.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno == EAGAIN;
      if (n == 0) return false;
      for (ssize_t i = 0; i < n; ++i) {
        line_.push_back(buf[i]);
        if (buf[i] == '\n') emit();
      }
    }
  }
  void emit() {
    std::lock_guard<std::mutex> lock(*out_mu_);
    fputs(prefix_.c_str(), stdout);
    fwrite(line_.data(), 1, line_.size(), stdout);
    fflush(stdout);
    line_.clear();
  }

  UniqueFd read_, write_;
  EventFd stop_;
  std::string prefix_, line_;
  std::mutex* out_mu_ = nullptr;
  std::thread thread_;
};

// The restore notice, to every clone at once: a new token each, the wall clock and
// fresh entropy. A clone whose agent does not take it keeps the snapshot's token and RNG state,
// which it shares with every other clone: it is stopped rather than left running.
void send_restore_notices(const RestoreArgs& args, std::vector<std::unique_ptr<Machine>>& vms) {
  const uint32_t n = static_cast<uint32_t>(vms.size());
  std::vector<std::thread> senders;
  for (uint32_t i = 0; i < n; ++i) {
    senders.emplace_back([&, i] {
      const std::string who = n > 1 ? "clone " + std::to_string(i) + ": " : "";
      auto fail_clone = [&](const std::string& why) {
        fprintf(stderr, "carapace: %srestore notice: %s\n", who.c_str(), why.c_str());
        vms[i]->stop(VmOutcome::kHostError, "restore notice not delivered: " + why);
      };
      auto token = generate_sandbox_token();
      if (!token.ok()) return fail_clone(token.error().describe());
      const MachineConfig& config = vms[i]->config();
      auto applied = send_restore_notice(
          config.devices.vsock->uds_path, RestoreNotice{args.agent_token, *token, ""},
          std::chrono::milliseconds(static_cast<int64_t>(args.agent_timeout_s * 1000)));
      if (!applied.ok()) return fail_clone(applied.error().describe());
      if (!args.agent_token_out.empty()) {
        const std::string path =
            n > 1 ? args.agent_token_out + "." + std::to_string(i) : args.agent_token_out;
        UniqueFd fd(
            open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
        const std::string line = *token + "\n";
        if (!fd.valid() || write(fd.get(), line.data(), line.size()) != ssize_t(line.size()))
          return fail_clone("cannot write " + path);
      }
      LOG_INFO("%srestore notice delivered", who.c_str());
    });
  }
  for (auto& t : senders)
    t.join();
}

}  // namespace

int cmd_restore(const std::vector<std::string>& args) {
  if (print_help_if_asked(args, kRestoreUsage)) return kExitOk;
  auto parsed = parse_restore_args(args);
  if (!parsed.ok()) return fail(parsed.error());
  set_log_level(static_cast<LogLevel>(parsed->log_level));
  const uint32_t n = parsed->clones;
  raise_open_file_limit_for_shares(parsed->machine.devices.filesystems.size());
  if (parsed->seccomp) {
    if (Status s = enable_seccomp(); !s.ok()) return fail(s.error());
  }

  // Everything about the snapshot is checked before any VM exists (docs/security.md #19-#21).
  auto snap = load_machine_snapshot(parsed->snapshot_dir);
  if (!snap.ok()) return fail(snap.error());
  // From here on this thread builds VMs and serves their APIs: its filter goes on now, so every
  // thread it starts (console pumps, API servers, vCPUs) runs under it too.
  if (Status s = apply_seccomp(ThreadRole::kMain); !s.ok()) return fail(s.error());

  std::mutex out_mu;
  std::vector<std::unique_ptr<LinePrefixer>> prefixers;
  std::vector<std::unique_ptr<Machine>> machines;
  machines.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    MachineConfig config = clone_config(*parsed, i);
    std::unique_ptr<LinePrefixer> prefixer;
    if (n > 1 && config.console.kind == ConsoleKind::kStdio) {
      auto p = LinePrefixer::create(i, &out_mu);
      if (!p.ok()) return fail(p.error());
      prefixer = std::move(*p);
      config.console.kind = ConsoleKind::kFile;
      config.console.path = prefixer->sink_path();
    }
    auto m = restore_machine(*snap, config);
    if (!m.ok()) return fail(m.error(), n > 1 ? "clone " + std::to_string(i) + ": " : "");
    if (prefixer) {
      prefixer->start();
      prefixers.push_back(std::move(prefixer));
    }
    machines.push_back(std::move(*m));
  }

  // --paused: the vCPUs are parked before the API serves, so it never shows a VM about to be
  // paused as running (a resume then would be refused). Nothing of the guest runs yet.
  if (parsed->start_paused) {
    for (auto& m : machines)
      if (Status s = m->start_paused(); !s.ok())
        m->stop(VmOutcome::kHostError, s.error().describe());
  }
  auto stop_started = [&] {
    if (!parsed->start_paused) return;
    for (auto& m : machines) {
      m->stop(VmOutcome::kHostError, "--api-sock failed");
      m->resume();
      m->wait();
    }
  };

  // Control APIs are up before the clones start, so a bad --api-sock fails before anything ran.
  std::vector<std::unique_ptr<MachineControl>> controls;
  std::vector<std::unique_ptr<VmApi>> apis;
  if (!parsed->api_sock.empty()) {
    for (uint32_t i = 0; i < n; ++i) {
      controls.push_back(std::make_unique<MachineControl>(*machines[i]));
      const std::string path =
          n > 1 ? parsed->api_sock + "." + std::to_string(i) : parsed->api_sock;
      auto api = VmApi::start(path, *controls.back());
      if (!api.ok()) {
        stop_started();
        return fail(api.error(), "--api-sock " + path + ": ");
      }
      apis.push_back(std::move(*api));
    }
  }

  if (!parsed->start_paused)
    for (auto& m : machines)
      m->start();
  if (!parsed->agent_token.empty()) send_restore_notices(*parsed, machines);
  std::vector<VmOutcome> outcomes(n, VmOutcome::kGuestReset);
  {
    // Each clone's --timeout runs from its own start, so every one waits on its own thread.
    std::vector<std::thread> waiters;
    waiters.reserve(n);
    for (uint32_t i = 0; i < n; ++i)
      waiters.emplace_back([&, i] { outcomes[i] = machines[i]->wait(); });
    for (auto& t : waiters)
      t.join();
  }
  // Every console is flushed (wait() closed the sinks): copy what is left and stop.
  prefixers.clear();
  for (auto& api : apis)
    api->stop();
  for (auto& c : controls)
    c->wait_children();

  int worst = kExitOk;
  for (uint32_t i = 0; i < n; ++i) {
    std::string who = n > 1 ? "clone " + std::to_string(i) + ": " : "";
    if (outcomes[i] != VmOutcome::kGuestReset)
      fprintf(stderr, "carapace: %sVM ended: %s: %s\n", who.c_str(), outcome_name(outcomes[i]),
              machines[i]->outcome_detail().c_str());
    if (uint64_t dropped = machines[i]->console_dropped())
      LOG_WARN("%sconsole: %llu bytes dropped", who.c_str(),
               static_cast<unsigned long long>(dropped));
    worst = std::max(worst, exit_code_for(outcomes[i]));
  }
  if (parsed->deferred_teardown) {
    fflush(nullptr);
    hand_off_kvm_teardown();
  }
  return worst;
}

}  // namespace carapace
