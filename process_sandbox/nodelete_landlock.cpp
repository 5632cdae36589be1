#include "process_sandbox/nodelete_landlock.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <set>

namespace carapace {
namespace {

// Newer than the build host's headers may be (ABI 3, Linux 6.2).
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
constexpr uint64_t kAccessTruncate = 1ULL << 14;
#else
constexpr uint64_t kAccessTruncate = LANDLOCK_ACCESS_FS_TRUNCATE;
#endif

constexpr int kNeededAbi = 3;
// What a folder outside the share keeps: removing its entries and truncating its files.
constexpr uint64_t kOutsideRights =
    LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | kAccessTruncate;
constexpr uint64_t kHandled = kOutsideRights | LANDLOCK_ACCESS_FS_REFER;

Error bad(const std::string& m) {
  return as_invalid_input(make_error(m));
}

Status add_rule(int ruleset, int fd, uint64_t access, const std::string& path) {
  landlock_path_beneath_attr rule{};
  rule.allowed_access = access;
  rule.parent_fd = fd;
  if (::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0)
    return sys_error("landlock_add_rule " + path);
  return ok_status();
}

// The entries of `dir` that are not on the way to a share get their rights back: folders all of
// kOutsideRights, regular files TRUNCATE (the only one of them a file can hold).
Status grant_siblings(int ruleset, const std::string& dir, const std::set<std::string>& chain) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return sys_error("opendir " + dir);
  Status result = ok_status();
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = (dir == "/" ? "" : dir) + "/" + name;
    if (chain.contains(path)) continue;
    UniqueFd fd(::openat(::dirfd(d), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0) {
      result = sys_error("open " + path);
      break;
    }
    const uint64_t access =
        S_ISDIR(st.st_mode) ? kOutsideRights : (S_ISREG(st.st_mode) ? kAccessTruncate : 0);
    if (access == 0) continue;  // a symlink, socket or device: nothing beneath it to grant
    result = add_rule(ruleset, fd.get(), access, path);
    if (!result.ok()) break;
  }
  ::closedir(d);
  return result;
}

}  // namespace

int landlock_abi() {
  long v = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return v < 0 ? 0 : static_cast<int>(v);
}

Status nodelete_supported_at(int abi) {
  if (abi >= kNeededAbi) return ok_status();
  if (abi == 0)
    return bad(
        "mode rw-nodelete needs Landlock, which this kernel does not have enabled (lsm=); use ro "
        "or rw");
  return bad("mode rw-nodelete needs Landlock ABI " + std::to_string(kNeededAbi) +
             " (Linux 6.2, for truncation); this kernel has ABI " + std::to_string(abi) +
             "; use ro or rw");
}

Result<UniqueFd> nodelete_ruleset(const std::vector<std::string>& guest_paths) {
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = kHandled;
  UniqueFd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0)));
  if (!ruleset.valid()) return sys_error("landlock_create_ruleset");
  // Every share and every folder above one: never granted the rights a share must not have.
  std::set<std::string> chain{"/"};
  std::set<std::string> above{"/"};
  for (const std::string& g : guest_paths) {
    chain.insert(g);
    for (size_t slash = g.find('/', 1); slash != std::string::npos;
         slash = g.find('/', slash + 1)) {
      chain.insert(g.substr(0, slash));
      above.insert(g.substr(0, slash));
    }
  }
  UniqueFd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return sys_error("open /");
  // Renames and links across folders stay possible (an unhandled REFER would make them EXDEV
  // everywhere); Landlock still refuses one that would give a file rights it did not have.
  TRY_STATUS(add_rule(ruleset.get(), root.get(), LANDLOCK_ACCESS_FS_REFER, "/"));
  for (const std::string& dir : above)
    TRY_STATUS(grant_siblings(ruleset.get(), dir, chain));
  return ruleset;
}

Status restrict_self_to(int ruleset) {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return sys_error("PR_SET_NO_NEW_PRIVS");
  if (::syscall(SYS_landlock_restrict_self, ruleset, 0) != 0)
    return sys_error("landlock_restrict_self");
  return ok_status();
}

}  // namespace carapace
