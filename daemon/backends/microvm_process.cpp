#include "daemon/backends/microvm_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <functional>
#include <thread>
#include <utility>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace carapace::service {

namespace {

int pidfd_open(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

int pidfd_send_signal(int pidfd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

// Every VMM is forked on this one thread, which lives as long as the daemon. The children ask
// for SIGKILL when it ends (PR_SET_PDEATHSIG), so a daemon that dies, even by SIGKILL, leaves no
// VMM behind. The death signal follows the *thread* that forked, which is why a short-lived
// request thread must not fork them.
class ForkThread {
 public:
  static ForkThread& get() {
    static ForkThread* thread = new ForkThread;  // never destroyed: it must outlive every caller
    return *thread;
  }
  // Runs `fork_child` (which forks and returns the pid, or -1 with errno) on the thread.
  std::pair<pid_t, int> run(const std::function<pid_t()>& fork_child) {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [&] { return job_ == nullptr; });
    job_ = &fork_child;
    done_ = false;
    cv_.notify_all();
    idle_.wait(lock, [&] { return done_; });
    auto out = std::make_pair(pid_, errno_);
    job_ = nullptr;
    idle_.notify_all();
    return out;
  }

 private:
  ForkThread() {
    std::thread([this] { loop(); }).detach();
  }
  void loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return job_ != nullptr && !done_; });
      pid_ = (*job_)();
      errno_ = errno;
      done_ = true;
      idle_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_, idle_;
  const std::function<pid_t()>* job_ = nullptr;
  bool done_ = false;
  pid_t pid_ = -1;
  int errno_ = 0;
};

}  // namespace

const char* vmm_exit_meaning(int status) {
  switch (status) {
    case 0:
      return "guest reset";
    case 1:
      return "host error";
    case 2:
      return "bad input";
    case 3:
      return "triple fault";
    case 4:
      return "KVM error";
    case 5:
      return "timeout";
    case 6:
      return "guest panic";
    default:
      return "unknown";
  }
}

Result<VmmProcess> VmmProcess::spawn(const std::vector<std::string>& argv,
                                     const std::string& log_path,
                                     const std::vector<int>& pass_fds) {
  if (argv.empty()) return make_error("spawn: empty command line");
  // Everything the child needs is prepared before fork: between fork and exec only
  // async-signal-safe calls (the daemon has threads).
  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  UniqueFd log(
      log_path.empty()
          ? ::fcntl(2, F_DUPFD_CLOEXEC, 3)
          : ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!log.valid())
    return sys_error(log_path.empty() ? "spawn: dup stderr" : "spawn: cannot create " + log_path);
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null.valid()) return sys_error("spawn: /dev/null");

  std::vector<int> staged(pass_fds.size(), -1);  // written by the child only (its copy)
  const int first_free = 3 + static_cast<int>(pass_fds.size());
  const pid_t daemon = ::getpid();
  auto [pid, fork_errno] = ForkThread::get().run([&]() -> pid_t {
    pid_t child = ::fork();
    if (child != 0) return child;
    // The daemon may have died between fork and prctl: then nobody would send the signal.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != daemon) ::_exit(127);
    // dup2 clears O_CLOEXEC on the copies; every other descriptor of the daemon is CLOEXEC.
    if (::dup2(null.get(), 0) < 0 || ::dup2(log.get(), 1) < 0 || ::dup2(log.get(), 2) < 0)
      ::_exit(127);
    // Through numbers above every target first, so no source is overwritten before it moves.
    for (size_t i = 0; i < pass_fds.size(); ++i)
      if ((staged[i] = ::fcntl(pass_fds[i], F_DUPFD_CLOEXEC, first_free)) < 0) ::_exit(127);
    for (size_t i = 0; i < staged.size(); ++i)
      if (::dup2(staged[i], 3 + static_cast<int>(i)) < 0) ::_exit(127);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(args[0], args.data());
    static const char kMsg[] = "carapace: exec of the VMM failed\n";
    (void)!::write(2, kMsg, sizeof kMsg - 1);
    ::_exit(127);
  });
  if (pid < 0) return sys_error("spawn: fork", fork_errno);
  VmmProcess p;
  p.pid_ = pid;
  // Nobody else reaps our children, so the pid cannot be reused before this.
  p.pidfd_.reset(pidfd_open(pid));
  if (!p.pidfd_.valid()) {
    Error e = sys_error("spawn: pidfd_open");
    ::kill(pid, SIGKILL);
    int status;
    ::waitpid(pid, &status, 0);
    p.pid_ = -1;
    return e;
  }
  return p;
}

VmmProcess::VmmProcess(VmmProcess&& other) noexcept {
  *this = std::move(other);
}

VmmProcess& VmmProcess::operator=(VmmProcess&& other) noexcept {
  if (this != &other) {
    kill();
    pid_ = other.pid_;
    pidfd_ = std::move(other.pidfd_);
    wait_status_ = other.wait_status_;
    other.pid_ = -1;
    other.wait_status_.reset();
  }
  return *this;
}

void VmmProcess::reap(bool block) {
  if (wait_status_ || !pidfd_.valid()) return;
  siginfo_t info{};
  int r;
  do {
    r = ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info,
                 WEXITED | (block ? 0 : WNOHANG));
  } while (r < 0 && errno == EINTR);
  if (r < 0 || info.si_pid == 0) return;  // still running (or not ours any more)
  wait_status_ = Exit{info.si_code == CLD_EXITED, info.si_status};
  pidfd_.reset();
}

bool VmmProcess::alive() {
  std::lock_guard lock(mu_);
  if (pid_ < 0) return false;
  reap(false);
  return !wait_status_;
}

bool VmmProcess::wait_exit(int timeout_ms) {
  std::lock_guard lock(mu_);
  if (pid_ < 0 || wait_status_) return true;
  pollfd p{pidfd_.get(), POLLIN, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (r <= 0) return false;
  reap(true);
  return true;
}

void VmmProcess::kill() {
  std::lock_guard lock(mu_);
  if (pid_ < 0 || wait_status_) return;
  if (pidfd_.valid()) {
    (void)pidfd_send_signal(pidfd_.get(), SIGKILL);
    reap(true);
  }
}

void VmmProcess::stop(int grace_ms) {
  {
    std::lock_guard lock(mu_);
    if (pid_ < 0 || wait_status_ || !pidfd_.valid()) return;
    (void)pidfd_send_signal(pidfd_.get(), SIGTERM);
  }
  if (!wait_exit(grace_ms)) kill();
}

std::string VmmProcess::describe_exit() {
  std::lock_guard lock(mu_);
  if (pid_ < 0) return "never started";
  reap(false);
  if (!wait_status_) return "running";
  if (wait_status_->exited) {
    const int code = wait_status_->code;
    return "vmm exited with status " + std::to_string(code) + " (" + vmm_exit_meaning(code) + ")";
  }
  const int sig = wait_status_->code;
  const char* abbrev = ::sigabbrev_np(sig);
  return std::string("vmm killed by SIG") + (abbrev ? abbrev : std::to_string(sig).c_str());
}

}  // namespace carapace::service
