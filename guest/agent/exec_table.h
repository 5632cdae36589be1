// ExecTable: the running execs by request id, so a `kill` request (from any connection) can
// signal one. Ids are chosen by clients; an id is reserved before the process starts, so a
// duplicate is refused before anything runs.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "common/base/result.h"

namespace carapace::agent {

class ExecTable {
 public:
  // id_in_use when an exec with this id is running.
  Status reserve(uint64_t id);
  void set_group(uint64_t id, pid_t pgid);
  void release(uint64_t id);
  // Signals the exec's whole process group; not_found when no such exec is running.
  Status signal(uint64_t id, int sig);
  // SIGKILL to every running exec's process group.
  void kill_all();

 private:
  std::mutex mu_;
  std::unordered_map<uint64_t, pid_t> groups_;  // 0 while the process is being started
};

}  // namespace carapace::agent
