#include "guest/agent/child_registry.h"

#include <signal.h>
#include <sys/wait.h>

#include <ctime>

namespace carapace::agent {

Result<std::unique_ptr<ChildRegistry>> ChildRegistry::start() {
  std::unique_ptr<ChildRegistry> r(new ChildRegistry());
  ChildRegistry* raw = r.get();
  // The registry lives as long as the process; the thread is never joined.
  r->reaper_ = std::thread([raw] { raw->reap_loop(); });
  r->reaper_.detach();
  return r;
}

Result<std::shared_ptr<ChildWatch>> ChildRegistry::spawn(
    const std::function<Result<pid_t>()>& spawn) {
  auto watch = std::make_shared<ChildWatch>(TRY(EventFd::create()));
  std::lock_guard lock(mu_);
  watch->pid = TRY(spawn());
  watched_[watch->pid] = watch;
  return watch;
}

void ChildRegistry::reap_ready() {
  std::lock_guard lock(mu_);
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;  // 0: none ready; -1/ECHILD: no children at all
    auto it = watched_.find(pid);
    if (it == watched_.end()) continue;  // an orphan: reaped, nothing to report
    it->second->wait_status.store(status);
    (void)it->second->exited.write();  // a failed eventfd write leaves nothing to do
    watched_.erase(it);
  }
}

void ChildRegistry::reap_loop() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  // The timeout is a backstop: SIGCHLD is blocked everywhere, so it is normally taken here.
  const timespec backstop{0, 250'000'000};
  for (;;) {
    siginfo_t info;
    (void)sigtimedwait(&set, &info, &backstop);
    reap_ready();
  }
}

}  // namespace carapace::agent
