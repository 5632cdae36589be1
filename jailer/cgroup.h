// A jail's cgroups: the v1 hierarchies (memory, cpu, cpuacct, pids, blkio) and/or the unified v2
// tree, detected from /proc/self/mountinfo. Each jail gets <hierarchy>/carapace/<id>; limits are
// written before the child joins, and the directories are removed when it has ended.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "jailer/jail_config.h"

namespace carapace {

struct CgroupLimits {
  uint64_t mem_bytes = 0;  // 0: none
  uint32_t cpu_pct = 0;    // 0: none
  uint64_t pids_max = 0;   // 0: none
};

struct CgroupMounts {
  struct V1 {
    std::string mount;
    std::vector<std::string> controllers;
  };
  std::vector<V1> v1;
  std::string unified;  // mount point of the cgroup2 tree, "" when none
  std::vector<std::string> unified_controllers;
};

// The cgroup mounts named in a mountinfo text (pure; controllers of the v2 tree are not filled).
CgroupMounts parse_cgroup_mounts(const std::string& mountinfo);
// The mounts of this process, with the v2 tree's cgroup.controllers read.
Result<CgroupMounts> detect_cgroup_mounts();

class JailCgroups {
 public:
  // Chooses the directories and checks that every requested limit has a controller; creates
  // nothing. Errors name the missing controller.
  static Result<JailCgroups> plan(const CgroupMounts& mounts, CgroupVersion version,
                                  const CgroupLimits& limits, const std::string& id);

  // Kills whatever a dead supervisor left in these cgroups and removes them (no-op when absent).
  Status remove_stale();
  // Creates the directories and writes the limits.
  Status create();
  // The unified tree's directory ("" when not used): the child is cloned straight into it
  // (CLONE_INTO_CGROUP), which costs no migration.
  std::string v2_dir() const;
  // Moves `pid` (as seen from this PID namespace) into every v1 directory, and into the v2 one
  // too unless the child was cloned into it.
  Status add_process(pid_t pid, bool cloned_into_v2);
  // One line when the memory controller killed something ("" otherwise); read before remove().
  std::string oom_report() const;
  // Removes the directories (waiting briefly for the kernel to let the last task go).
  Status remove();

  std::vector<std::string> paths() const;

 private:
  struct Dir {
    std::string path;
    bool v2 = false;
    std::vector<std::string> limit_controllers;  // controllers whose limits go in this dir
  };
  std::vector<Dir> dirs_;
  std::string v2_root_;                 // for enabling controllers in subtree_control
  std::vector<std::string> v2_enable_;  // controllers to enable down to the jail's dir
  CgroupLimits limits_;
};

}  // namespace carapace
