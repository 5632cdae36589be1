// `carapace jail` configuration: the flags, parsed and validated before anything is created.
// Parsing is pure (unit-testable); check_jail_host_paths() looks at the file system but changes
// nothing.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/base/result.h"

namespace carapace {

struct JailBind {
  std::string path;  // absolute, normalised; the same path inside the jail
  bool read_only = false;
};

enum class JailNetNs { kNew, kNone };
// /proc in the jail: none (default), or the jail's own processes only (procfs with subset=pid,
// hidepid=invisible in the jail's PID namespace: /proc/self/pagemap for sparse snapshots, and
// what sanitizer runtimes read, without /proc/sys or any other process).
enum class JailProc { kNone, kPids };
enum class CgroupVersion { kAuto, kV1, kV2 };

struct JailConfig {
  std::string id;
  std::string exec_file;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string chroot_base = "/srv/carapace-jail";
  std::vector<JailBind> binds;
  JailNetNs netns = JailNetNs::kNew;
  JailProc proc = JailProc::kNone;
  uint64_t mem_limit_mib = 0;  // 0: no memory limit
  uint32_t cpu_quota_pct = 0;  // 0: no CPU quota; 100 = one CPU
  uint64_t pids_max = 0;       // 0: no pids limit
  uint64_t nofile = 4096;
  uint64_t fsize_mib = 0;  // 0: no file-size limit
  CgroupVersion cgroup_version = CgroupVersion::kAuto;
  std::vector<std::string> exec_args;  // after "--"
  bool help = false;

  std::string jail_dir() const { return chroot_base + "/" + id; }
  std::string root_dir() const { return jail_dir() + "/root"; }  // a tmpfs inside the jail
  std::string run_dir() const { return jail_dir() + "/run"; }    // the jail's /run
};

// Syntax and ranges of every flag (invalid-input errors). Paths are normalised (no "." or ".."
// components, no repeated or trailing slashes) but not looked up.
Result<JailConfig> parse_jail_args(const std::vector<std::string>& args);

// Every path exists with the right type; binds do not overlap each other or the exec file, nor
// the jail's own /dev, /tmp and /run. Invalid-input errors.
Status check_jail_host_paths(const JailConfig& cfg);

// Absolute path with no "." / ".." components; repeated and trailing slashes removed.
Result<std::string> normalise_abs_path(const std::string& flag, const std::string& path);

// A jail id: 1-64 characters of [A-Za-z0-9-] (it names a folder and cgroups).
Status check_jail_id(const std::string& id);

// auto, 1 or 2 (--cgroup-version).
Result<CgroupVersion> parse_cgroup_version(const std::string& flag, const std::string& v);

// True when `inner` is `outer` or lies below it.
bool path_within(const std::string& inner, const std::string& outer);

extern const char kJailUsage[];

}  // namespace carapace
