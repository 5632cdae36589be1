#include "jailer/cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "common/base/unique_fd.h"

namespace carapace {
namespace {

// v1 controllers a jail joins; cpuset is left out (a new cpuset cgroup needs cpus/mems first).
constexpr const char* kV1Controllers[] = {"memory", "cpu", "cpuacct", "pids", "blkio"};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Status write_file(const std::string& path, const std::string& value) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return sys_error("cgroup: open " + path);
  if (::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size()))
    return sys_error("cgroup: write '" + value + "' to " + path);
  return ok_status();
}

bool exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

Status make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
    return sys_error("cgroup: mkdir " + path);
  return ok_status();
}

// The value after `key ` in a flat-keyed file such as memory.events.
uint64_t keyed_value(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string k;
  uint64_t v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return 0;
}

// How long a cgroup's processes, once sent SIGKILL, get to leave it, and the kernel to let go
// of the emptied cgroup. Generous: a killed process with much memory to free, on a loaded host,
// has been seen to take over 2 s, and a cgroup given up on is left behind for good.
constexpr std::chrono::seconds kRemoveBudget{10};

// Retries the removal while the cgroup is busy, up to kRemoveBudget.
Status rmdir_retry(const std::string& path) {
  const auto deadline = std::chrono::steady_clock::now() + kRemoveBudget;
  for (;;) {
    if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return ok_status();
    if (errno != EBUSY || std::chrono::steady_clock::now() >= deadline) break;
    ::usleep(1000);
  }
  return sys_error("cgroup: rmdir " + path);
}

}  // namespace

CgroupMounts parse_cgroup_mounts(const std::string& mountinfo) {
  CgroupMounts m;
  std::istringstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f = split(line, ' ');
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || f.end() - dash < 4) continue;
    const std::string& mount = f[4];
    const std::string& fstype = dash[1];
    if (fstype == "cgroup2") {
      if (m.unified.empty()) m.unified = mount;
    } else if (fstype == "cgroup") {
      CgroupMounts::V1 v1{mount, {}};
      for (const std::string& opt : split(dash[3], ','))
        for (const char* c : kV1Controllers)
          if (opt == c) v1.controllers.push_back(opt);
      if (!v1.controllers.empty()) m.v1.push_back(v1);
    }
  }
  return m;
}

Result<CgroupMounts> detect_cgroup_mounts() {
  std::string text = read_file("/proc/self/mountinfo");
  if (text.empty()) return make_error("cgroup: cannot read /proc/self/mountinfo");
  CgroupMounts m = parse_cgroup_mounts(text);
  if (!m.unified.empty())
    m.unified_controllers = split(read_file(m.unified + "/cgroup.controllers"), ' ');
  for (auto& c : m.unified_controllers)
    if (!c.empty() && c.back() == '\n') c.pop_back();
  return m;
}

Result<JailCgroups> JailCgroups::plan(const CgroupMounts& mounts, CgroupVersion version,
                                      const CgroupLimits& limits, const std::string& id) {
  const bool use_v1 =
      version == CgroupVersion::kV1 || (version == CgroupVersion::kAuto && !mounts.v1.empty());
  const bool use_v2 =
      version == CgroupVersion::kV2 || (version == CgroupVersion::kAuto && !mounts.unified.empty());
  if (version == CgroupVersion::kV1 && mounts.v1.empty())
    return make_error("cgroup: --cgroup-version 1, but no v1 hierarchy is mounted");
  if (use_v2 && mounts.unified.empty())
    return make_error("cgroup: --cgroup-version 2, but no unified (v2) tree is mounted");
  if (!use_v1 && !use_v2) return make_error("cgroup: no cgroup hierarchy is mounted");

  JailCgroups cg;
  cg.limits_ = limits;
  if (use_v1)
    for (const auto& h : mounts.v1)
      cg.dirs_.push_back({h.mount + "/carapace/" + id, false, {}});
  size_t v2_index = cg.dirs_.size();
  if (use_v2) {
    cg.dirs_.push_back({mounts.unified + "/carapace/" + id, true, {}});
    cg.v2_root_ = mounts.unified;
  }
  // Each requested limit goes to the first hierarchy that has its controller, v1 first.
  auto place = [&](const std::string& controller) -> Status {
    if (use_v1)
      for (size_t i = 0; i < mounts.v1.size(); ++i)
        if (contains(mounts.v1[i].controllers, controller)) {
          cg.dirs_[i].limit_controllers.push_back(controller);
          return ok_status();
        }
    if (use_v2 && contains(mounts.unified_controllers, controller)) {
      cg.dirs_[v2_index].limit_controllers.push_back(controller);
      cg.v2_enable_.push_back(controller);
      return ok_status();
    }
    return make_error("cgroup: the " + controller +
                      " controller is not available in the selected hierarchies");
  };
  if (limits.mem_bytes) TRY_STATUS(place("memory"));
  if (limits.cpu_pct) TRY_STATUS(place("cpu"));
  if (limits.pids_max) TRY_STATUS(place("pids"));
  // Block I/O accounting where the v2 tree has it and no v1 blkio hierarchy does.
  bool v1_blkio = false;
  if (use_v1)
    for (const auto& h : mounts.v1)
      v1_blkio = v1_blkio || contains(h.controllers, "blkio");
  if (use_v2 && !v1_blkio && contains(mounts.unified_controllers, "io"))
    cg.v2_enable_.push_back("io");
  return cg;
}

Status JailCgroups::remove_stale() {
  for (const Dir& d : dirs_) {
    if (!exists(d.path)) continue;
    // A supervisor killed with SIGKILL can leave its VMM behind only if the VMM outlived its
    // parent-death signal; kill whatever is in there before removing the directory.
    if (d.v2 && exists(d.path + "/cgroup.kill")) (void)write_file(d.path + "/cgroup.kill", "1");
    const auto deadline = std::chrono::steady_clock::now() + kRemoveBudget;
    while (std::chrono::steady_clock::now() < deadline) {
      std::istringstream procs(read_file(d.path + "/cgroup.procs"));
      pid_t pid = 0;
      bool any = false;
      while (procs >> pid) {
        any = true;
        ::kill(pid, SIGKILL);
      }
      if (!any) break;
      ::usleep(1000);
    }
    TRY_STATUS(rmdir_retry(d.path));
  }
  return ok_status();
}

Status JailCgroups::create() {
  // The v2 tree hands a controller down only through every level's subtree_control.
  if (!v2_root_.empty()) {
    TRY_STATUS(make_dir(v2_root_ + "/carapace"));
    for (const std::string& c : v2_enable_) {
      Status root = write_file(v2_root_ + "/cgroup.subtree_control", "+" + c);
      Status mid = root.ok() ? write_file(v2_root_ + "/carapace/cgroup.subtree_control", "+" + c)
                             : std::move(root);
      // io is only for accounting: a tree that will not hand it down still gets a jail.
      if (!mid.ok() && c != "io") return mid;
    }
  }
  for (const Dir& d : dirs_) {
    TRY_STATUS(make_dir(d.path.substr(0, d.path.rfind('/'))));
    if (::mkdir(d.path.c_str(), 0755) != 0) return sys_error("cgroup: mkdir " + d.path);
    for (const std::string& c : d.limit_controllers) {
      if (c == "memory") {
        const std::string bytes = std::to_string(limits_.mem_bytes);
        if (d.v2) {
          TRY_STATUS(write_file(d.path + "/memory.max", bytes));
          if (exists(d.path + "/memory.swap.max"))
            TRY_STATUS(write_file(d.path + "/memory.swap.max", "0"));
        } else {
          TRY_STATUS(write_file(d.path + "/memory.limit_in_bytes", bytes));
          // Memory+swap, so the limit cannot be dodged by swapping (limit first: memsw >= mem).
          if (exists(d.path + "/memory.memsw.limit_in_bytes"))
            TRY_STATUS(write_file(d.path + "/memory.memsw.limit_in_bytes", bytes));
        }
      } else if (c == "cpu") {
        const std::string quota = std::to_string(uint64_t{limits_.cpu_pct} * 1000);
        if (d.v2) {
          TRY_STATUS(write_file(d.path + "/cpu.max", quota + " 100000"));
        } else {
          TRY_STATUS(write_file(d.path + "/cpu.cfs_period_us", "100000"));
          TRY_STATUS(write_file(d.path + "/cpu.cfs_quota_us", quota));
        }
      } else if (c == "pids") {
        TRY_STATUS(write_file(d.path + "/pids.max", std::to_string(limits_.pids_max)));
      }
    }
  }
  return ok_status();
}

std::string JailCgroups::v2_dir() const {
  for (const Dir& d : dirs_)
    if (d.v2) return d.path;
  return "";
}

Status JailCgroups::add_process(pid_t pid, bool cloned_into_v2) {
  // A v1 migration waits for an RCU grace period (cgroup_threadgroup_rwsem); only the first of
  // these writes pays it.
  for (const Dir& d : dirs_)
    if (!(d.v2 && cloned_into_v2))
      TRY_STATUS(write_file(d.path + "/cgroup.procs", std::to_string(pid)));
  return ok_status();
}

std::string JailCgroups::oom_report() const {
  for (const Dir& d : dirs_) {
    if (!contains(d.limit_controllers, "memory")) continue;
    uint64_t kills = d.v2 ? keyed_value(read_file(d.path + "/memory.events"), "oom_kill")
                          : keyed_value(read_file(d.path + "/memory.oom_control"), "oom_kill");
    if (kills)
      return "memory limit of " + std::to_string(limits_.mem_bytes >> 20) + " MiB reached (" +
             std::to_string(kills) + " OOM kill" + (kills == 1 ? "" : "s") + ")";
  }
  return "";
}

Status JailCgroups::remove() {
  Status first;
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
    Status s = rmdir_retry(it->path);
    if (!s.ok() && first.ok()) first = std::move(s);
  }
  return first;
}

std::vector<std::string> JailCgroups::paths() const {
  std::vector<std::string> out;
  for (const Dir& d : dirs_)
    out.push_back(d.path);
  return out;
}

}  // namespace carapace
