#include "guest/agent/exec_table.h"

#include <signal.h>

#include "common/agent/errors.h"
#include "common/agent/wire.h"

namespace carapace::agent {

Status ExecTable::reserve(uint64_t id) {
  std::lock_guard lock(mu_);
  if (!groups_.emplace(id, 0).second)
    return protocol_error(code::kIdInUse, "an exec with id " + std::to_string(id) + " is running");
  return {};
}

void ExecTable::set_group(uint64_t id, pid_t pgid) {
  std::lock_guard lock(mu_);
  groups_[id] = pgid;
}

void ExecTable::release(uint64_t id) {
  std::lock_guard lock(mu_);
  groups_.erase(id);
}

Status ExecTable::signal(uint64_t id, int sig) {
  std::lock_guard lock(mu_);
  auto it = groups_.find(id);
  if (it == groups_.end() || it->second <= 0)
    return protocol_error(code::kNotFound, "no running exec with id " + std::to_string(id));
  // A process group id stays taken while any member lives; the entry goes moments after the
  // leader is reaped, far too soon for the pid space to wrap round to a new group with this id.
  if (::kill(-it->second, sig) < 0 && errno != ESRCH) return sys_error("kill");
  return {};
}

void ExecTable::kill_all() {
  std::lock_guard lock(mu_);
  for (auto& [id, pgid] : groups_)
    if (pgid > 0) ::kill(-pgid, SIGKILL);
}

}  // namespace carapace::agent
