#include "jailer/jail_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/unique_fd.h"

namespace carapace {
namespace {

constexpr int kMaxDepth = 64;

Status remove_contents(int dirfd, dev_t dev, const std::string& what, int depth) {
  if (depth > kMaxDepth) return make_error("remove " + what + ": tree too deep");
  int dup = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return sys_error("dup");
  DIR* d = ::fdopendir(dup);
  if (d == nullptr) {
    ::close(dup);
    return sys_error("opendir " + what);
  }
  Status result;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (st.st_dev != dev) {
        result = make_error("remove " + what + "/" + name + ": a mount point, not removed");
        continue;
      }
      UniqueFd sub(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub.valid()) {
        result = sys_error("open " + what + "/" + name);
        continue;
      }
      Status s = remove_contents(sub.get(), dev, what + "/" + name, depth + 1);
      if (!s.ok()) result = std::move(s);
      if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
        result = sys_error("rmdir " + what + "/" + name);
    } else if (::unlinkat(dirfd, name.c_str(), 0) != 0 && errno != ENOENT) {
      result = sys_error("unlink " + what + "/" + name);
    }
  }
  ::closedir(d);
  return result;
}

}  // namespace

Status remove_dir_contents(int dirfd, const std::string& what) {
  struct stat st {};
  if (::fstat(dirfd, &st) != 0) return sys_error("stat " + what);
  return remove_contents(dirfd, st.st_dev, what, 0);
}

Status remove_tree(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return ok_status();
    // A file, socket or link: removed itself (a link is never followed).
    if (errno != ENOTDIR && errno != ELOOP) return sys_error("open " + path);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return sys_error("remove " + path);
    return ok_status();
  }
  TRY_STATUS(remove_dir_contents(fd.get(), path));
  if (::rmdir(path.c_str()) != 0 && errno != ENOENT) return sys_error("rmdir " + path);
  return ok_status();
}

Status make_dirs(const std::string& path, mode_t mode) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    const std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) return sys_error("mkdir " + prefix);
  }
  return ok_status();
}

Status make_mount_point(const std::string& path, bool directory) {
  TRY_STATUS(make_dirs(path.substr(0, path.rfind('/')), 0755));
  if (directory) {
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return sys_error("mkdir " + path);
    return ok_status();
  }
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0444));
  if (!fd.valid()) return sys_error("create " + path);
  return ok_status();
}

}  // namespace carapace
