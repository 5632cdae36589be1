#include "jailer/jail_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <optional>

#include "common/base/flag_values.h"

namespace carapace {

const char kJailUsage[] =
    "usage: carapace jail --id ID --exec-file /abs/carapace --uid N --gid N [options] -- ARGS...\n"
    "Runs the exec file (normally carapace itself, with ARGS such as `run --kernel ...`) in a\n"
    "minimal root with its own namespaces, cgroups and rlimits, as an unprivileged user; stays\n"
    "as a supervisor that removes the jail when the child ends and exits with the child's status\n"
    "(128+N when it was killed by signal N).\n"
    "`carapace jail attach --help`: put a host folder into a running jail.\n"
    "  --id ID                 1-64 characters of [A-Za-z0-9-]; names the jail and its cgroups\n"
    "  --exec-file PATH        absolute path of the binary to run (bound read-only in the jail)\n"
    "  --uid N, --gid N        the unprivileged ids the binary runs as (not 0)\n"
    "  --chroot-base DIR       where jails live (default /srv/carapace-jail): DIR/ID/root\n"
    "  --bind PATH[:ro]        bind-mount a host file or directory at the same path (repeatable)\n"
    "  --netns new|none        a new, empty network namespace (default) or the host's\n"
    "  --proc none|pids        no /proc (default), or one showing only the jail's processes\n"
    "  --mem-limit MiB         memory cgroup limit (swap included)\n"
    "  --cpu-quota PCT         CPU bandwidth, 100 = one CPU\n"
    "  --pids-max N            pids cgroup limit\n"
    "  --nofile N              RLIMIT_NOFILE (default 4096)\n"
    "  --fsize-mib N           RLIMIT_FSIZE, for snapshot writes (default unlimited)\n"
    "  --cgroup-version auto|1|2  which cgroup hierarchies to use (default auto: all mounted)\n"
    "Exit status: the child's; 1 host error, 2 bad input (nothing created).\n";

namespace {

Result<uint64_t> parse_u64(const std::string& flag, const std::string& v, uint64_t lo,
                           uint64_t hi) {
  const std::optional<uint64_t> out = decimal_u64(v);
  if (!out) return flag_error(flag + ": expected a number, got '" + v + "'");
  if (*out < lo || *out > hi)
    return flag_error(flag + ": " + v + " is out of range [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "]");
  return *out;
}

Result<JailBind> parse_bind(const std::string& v) {
  JailBind b;
  std::string path = v;
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ":ro") == 0) {
    b.read_only = true;
    path.resize(path.size() - 3);
  } else if (path.size() > 3 && path.compare(path.size() - 3, 3, ":rw") == 0) {
    path.resize(path.size() - 3);
  }
  b.path = TRY(normalise_abs_path("--bind", path));
  if (b.path == "/") return flag_error("--bind: cannot bind the host's root");
  return b;
}

}  // namespace

Result<CgroupVersion> parse_cgroup_version(const std::string& flag, const std::string& v) {
  return parse_choice<CgroupVersion>(
      flag, v,
      {{"auto", CgroupVersion::kAuto}, {"1", CgroupVersion::kV1}, {"2", CgroupVersion::kV2}});
}

Status check_jail_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return flag_error("--id: expected 1-64 characters");
  for (char c : id) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok) return flag_error("--id: only [A-Za-z0-9-] are allowed");
  }
  return ok_status();
}

Result<std::string> normalise_abs_path(const std::string& flag, const std::string& path) {
  if (path.empty() || path[0] != '/')
    return flag_error(flag + ": expected an absolute path, got '" + path + "'");
  if (path.size() > 1024) return flag_error(flag + ": path too long");
  std::string out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/')
      ++i;
    size_t end = path.find('/', i);
    if (end == std::string::npos) end = path.size();
    std::string comp = path.substr(i, end - i);
    i = end;
    if (comp.empty()) continue;
    if (comp == "." || comp == "..")
      return flag_error(flag + ": '.' and '..' are not allowed in '" + path + "'");
    if (comp.find('\0') != std::string::npos) return flag_error(flag + ": NUL in path");
    out += "/" + comp;
  }
  return out.empty() ? std::string("/") : out;
}

bool path_within(const std::string& inner, const std::string& outer) {
  if (outer == "/") return true;
  if (inner.compare(0, outer.size(), outer) != 0) return false;
  return inner.size() == outer.size() || inner[outer.size()] == '/';
}

Result<JailConfig> parse_jail_args(const std::vector<std::string>& args) {
  JailConfig cfg;
  bool have_uid = false, have_gid = false;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--help" || a == "-h") {
      cfg.help = true;
      return cfg;
    }
    if (a.rfind("--", 0) != 0)
      return flag_error("unexpected argument '" + a + "' (flags end at --)");
    if (i + 1 >= args.size()) return flag_error(a + ": missing value");
    const std::string& v = args[++i];
    if (a == "--id") {
      TRY_STATUS(check_jail_id(v));
      cfg.id = v;
    } else if (a == "--exec-file") {
      cfg.exec_file = TRY(normalise_abs_path(a, v));
    } else if (a == "--uid") {
      cfg.uid = static_cast<uid_t>(TRY(parse_u64(a, v, 1, 0xfffffffe)));
      have_uid = true;
    } else if (a == "--gid") {
      cfg.gid = static_cast<gid_t>(TRY(parse_u64(a, v, 1, 0xfffffffe)));
      have_gid = true;
    } else if (a == "--chroot-base") {
      cfg.chroot_base = TRY(normalise_abs_path(a, v));
      if (cfg.chroot_base == "/") return flag_error("--chroot-base: cannot be /");
    } else if (a == "--bind") {
      cfg.binds.push_back(TRY(parse_bind(v)));
    } else if (a == "--netns") {
      cfg.netns = TRY(
          parse_choice<JailNetNs>(a, v, {{"new", JailNetNs::kNew}, {"none", JailNetNs::kNone}}));
    } else if (a == "--proc") {
      cfg.proc =
          TRY(parse_choice<JailProc>(a, v, {{"none", JailProc::kNone}, {"pids", JailProc::kPids}}));
    } else if (a == "--mem-limit") {
      cfg.mem_limit_mib = TRY(parse_u64(a, v, 1, 1ull << 30));
    } else if (a == "--cpu-quota") {
      cfg.cpu_quota_pct = static_cast<uint32_t>(TRY(parse_u64(a, v, 1, 100 * 1024)));
    } else if (a == "--pids-max") {
      cfg.pids_max = TRY(parse_u64(a, v, 1, 1u << 22));
    } else if (a == "--nofile") {
      cfg.nofile = TRY(parse_u64(a, v, 16, 1u << 20));
    } else if (a == "--fsize-mib") {
      cfg.fsize_mib = TRY(parse_u64(a, v, 1, 1ull << 30));
    } else if (a == "--cgroup-version") {
      cfg.cgroup_version = TRY(parse_cgroup_version(a, v));
    } else {
      return flag_error("unknown flag '" + a + "' (see carapace jail --help)");
    }
  }
  cfg.exec_args.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (cfg.id.empty()) return flag_error("--id is required");
  if (cfg.exec_file.empty()) return flag_error("--exec-file is required");
  if (!have_uid || !have_gid) return flag_error("--uid and --gid are required (and must not be 0)");
  return cfg;
}

Status check_jail_host_paths(const JailConfig& cfg) {
  struct stat st {};
  if (::stat(cfg.exec_file.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return flag_error("--exec-file: no such regular file: " + cfg.exec_file);
  if ((st.st_mode & 0111) == 0) return flag_error("--exec-file: not executable: " + cfg.exec_file);
  if (::stat(cfg.chroot_base.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    return flag_error("--chroot-base: not a directory: " + cfg.chroot_base);
  // The jail's own mount points, and the host trees no VMM needs. Paths under /tmp may be bound
  // (they are mounted on top of the jail's private /tmp); /tmp itself, or a tree holding it,
  // may not.
  static const char* const kReserved[] = {"/dev", "/run", "/proc", "/sys"};
  for (size_t i = 0; i < cfg.binds.size(); ++i) {
    const JailBind& b = cfg.binds[i];
    if (::stat(b.path.c_str(), &st) != 0)
      return flag_error("--bind: no such file or directory: " + b.path);
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISSOCK(st.st_mode))
      return flag_error("--bind: not a regular file, directory or socket: " + b.path);
    for (const char* r : kReserved)
      if (path_within(b.path, r) || path_within(r, b.path))
        return flag_error("--bind: " + b.path + " overlaps the jail's " + r);
    if (path_within("/tmp", b.path))
      return flag_error("--bind: " + b.path + " would hide the jail's private /tmp");
    if (path_within(cfg.exec_file, b.path) || path_within(b.path, cfg.exec_file))
      return flag_error("--bind: " + b.path + " overlaps --exec-file");
    if (path_within(cfg.chroot_base, b.path) || path_within(b.path, cfg.chroot_base))
      return flag_error("--bind: " + b.path + " overlaps --chroot-base");
    for (size_t j = 0; j < i; ++j)
      if (path_within(b.path, cfg.binds[j].path) || path_within(cfg.binds[j].path, b.path))
        return flag_error("--bind: " + b.path + " overlaps " + cfg.binds[j].path);
  }
  return ok_status();
}

}  // namespace carapace
