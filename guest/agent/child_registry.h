// ChildRegistry: the agent's only waitpid caller. A reaper thread reaps every child - the
// processes the agent spawned and, as PID 1 or a child subreaper, every orphan re-parented to
// it - and hands the status of a watched pid to whoever watches it. One reaper for all keeps
// zombies from piling up without stealing an exec's exit status.
//
// SIGCHLD must be blocked in every thread (block it in main before any thread starts): the
// reaper takes it with sigtimedwait.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/base/event_fd.h"
#include "common/base/result.h"

namespace carapace::agent {

// One watched child. `exited` becomes readable once `wait_status` holds its waitpid status.
struct ChildWatch {
  explicit ChildWatch(EventFd e) : exited(std::move(e)) {}
  pid_t pid = -1;
  EventFd exited;
  std::atomic<int> wait_status{0};  // stored by the reaper before `exited` is signalled
};

class ChildRegistry {
 public:
  // Starts the reaper thread (it runs for the life of the process).
  static Result<std::unique_ptr<ChildRegistry>> start();

  // Runs `spawn` with the registry locked and watches the pid it returns: the reaper cannot reap
  // the child between its creation and its registration.
  Result<std::shared_ptr<ChildWatch>> spawn(const std::function<Result<pid_t>()>& spawn);

 private:
  ChildRegistry() = default;
  void reap_loop();
  void reap_ready();

  std::mutex mu_;
  std::unordered_map<pid_t, std::shared_ptr<ChildWatch>> watched_;
  std::thread reaper_;
};

}  // namespace carapace::agent
