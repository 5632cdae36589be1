// VmmProcess: one `carapace run`/`restore` child of the daemon, owned through a pidfd. The back
// end reaps its own children (the daemon reaps nothing): alive() polls the pidfd and collects
// the exit status the moment the process ends; kill() is SIGKILL + wait. Destroying a VmmProcess
// kills it.
#pragma once

#include <sys/types.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace carapace::service {

class VmmProcess {
 public:
  // Starts argv[0] with `argv`; stdin is /dev/null, stdout and stderr go to `log_path` (empty:
  // the daemon's own stderr, for a child whose lines belong in the daemon's log). `pass_fds[i]`
  // becomes the child's descriptor 3 + i (a folder the daemon checked, named on the command line
  // as /proc/self/fd/N); no other descriptor is inherited.
  static Result<VmmProcess> spawn(const std::vector<std::string>& argv, const std::string& log_path,
                                  const std::vector<int>& pass_fds = {});
  VmmProcess() = default;
  VmmProcess(VmmProcess&& other) noexcept;
  VmmProcess& operator=(VmmProcess&& other) noexcept;
  ~VmmProcess() { kill(); }

  int pid() const { return pid_; }
  // False once the process ended (its status is then kept for describe_exit()).
  bool alive();
  // Waits up to `timeout_ms` for the process to end on its own; true if it did.
  bool wait_exit(int timeout_ms);
  // SIGKILL and reap; idempotent.
  void kill();
  // SIGTERM, then SIGKILL if it has not ended within `grace_ms`; reaped either way. For a
  // supervisor (`carapace jail`) that cleans up after its child when asked to stop.
  void stop(int grace_ms);
  // "vmm exited with status 6 (guest panic)", "killed by SIGKILL", or "running".
  std::string describe_exit();

 private:
  // Collects the exit status if the process has ended; `block` waits for it.
  void reap(bool block);

  int pid_ = -1;
  UniqueFd pidfd_;
  struct Exit {
    bool exited = false;  // else killed by signal `code`
    int code = 0;
  };
  std::optional<Exit> wait_status_;
  std::mutex mu_;
};

// The meaning of a `carapace run`/`restore` exit status (vmm/machine/exit_status.h).
const char* vmm_exit_meaning(int status);

}  // namespace carapace::service
