// Starting one exec'd process: posix_spawn (vfork-speed, safe in a threaded agent) into a new
// session - so it leads its own process group and a timeout or `kill` reaches everything it
// started - with the given stdio, working directory and environment, default signal dispositions
// and an empty signal mask.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/base/result.h"

namespace carapace::agent {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] without '/' is looked up in the environment's PATH
  std::vector<std::string> env;   // "NAME=value"
  int cwd_fd = -1;                // a directory (O_PATH is enough) the child fchdir()s to
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;
};

// The child's pid (also its process group and session id). A program that cannot be found or
// executed is exec_failed.
Result<pid_t> spawn_process(const SpawnSpec& spec);

// The environment every exec starts from; request entries override or add to it.
std::vector<std::string> default_exec_env();

}  // namespace carapace::agent
