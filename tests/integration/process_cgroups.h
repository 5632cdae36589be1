// The cgroups of a process sandbox (`carapace run --isolation process`, or one the daemon's process
// back end made) as tests find them from outside: its folders in the v1 hierarchies and the guest
// agent among their processes.
#pragma once

#include <glob.h>
#include <sys/types.h>

#include <fstream>
#include <string>
#include <vector>

namespace carapace::testing {

// The sandbox's folder in each cgroup v1 hierarchy (/sys/fs/cgroup/<controller>/carapace/...).
inline std::vector<std::string> sandbox_v1_cgroup_dirs(const std::string& id) {
  std::vector<std::string> out;
  glob_t g{};
  const std::string pattern = "/sys/fs/cgroup/*/carapace/process-" + id;
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i)
      out.push_back(g.gl_pathv[i]);
  ::globfree(&g);
  return out;
}

// The host pid of the sandbox's agent: the process named carapace-agent in any of `dirs`; 0 when
// none is.
inline pid_t agent_pid_in(const std::vector<std::string>& dirs) {
  pid_t agent = 0;
  for (const auto& dir : dirs) {
    std::ifstream procs(dir + "/cgroup.procs");
    pid_t p;
    while (procs >> p) {
      std::ifstream comm("/proc/" + std::to_string(p) + "/comm");
      std::string name;
      comm >> name;
      if (name == "carapace-agent") agent = p;
    }
  }
  return agent;
}

}  // namespace carapace::testing
