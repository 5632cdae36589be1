#include "daemon/backends/microvm/microvm_snapshot_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "common/base/unique_fd.h"
#include "jailer/jail_fs.h"

namespace carapace::service {

namespace {
constexpr size_t kTokenHexChars = 32;
}  // namespace

Status write_agent_token(const std::string& snapshot_dir, const std::string& token) {
  const std::string path = snapshot_dir + "/" + kAgentTokenFile;
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return sys_error("create " + tmp);
  const std::string line = token + "\n";
  if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
      ::fsync(fd.get()) != 0) {
    Error e = sys_error("write " + tmp);
    ::unlink(tmp.c_str());
    return e;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error e = sys_error("rename " + tmp);
    ::unlink(tmp.c_str());
    return e;
  }
  return {};
}

Result<std::string> read_agent_token(const std::string& snapshot_dir) {
  const std::string path = snapshot_dir + "/" + kAgentTokenFile;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return sys_error("open " + path);
  char buf[kTokenHexChars + 2];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n < 0) return sys_error("read " + path);
  std::string token(buf, static_cast<size_t>(n));
  if (!token.empty() && token.back() == '\n') token.pop_back();
  if (token.size() != kTokenHexChars ||
      token.find_first_not_of("0123456789abcdef") != std::string::npos)
    return make_error(path + ": not a token");
  return token;
}

Status seal_snapshot_dir(const std::string& dir, bool for_jails) {
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir_fd.valid()) return sys_error("snapshot folder " + dir);
  // The folder first: once it is root's and not writable by others, nobody else can add,
  // remove or rename entries in it, even through a descriptor opened earlier.
  if (for_jails && (::fchown(dir_fd.get(), 0, 0) != 0 || ::fchmod(dir_fd.get(), 0755) != 0))
    return sys_error("snapshot folder " + dir + ": chown/chmod");
  UniqueFd list_fd(::dup(dir_fd.get()));
  DIR* d = list_fd.valid() ? ::fdopendir(list_fd.get()) : nullptr;
  if (d == nullptr) return sys_error("list " + dir);
  (void)list_fd.release();  // the DIR owns it now
  Status result;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    UniqueFd f(::openat(dir_fd.get(), name.c_str(),
                        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    struct stat st {};
    if (!f.valid() || ::fstat(f.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      result = as_invalid_input(
          make_error("snapshot folder " + dir + ": " + name + " is not a regular file"));
      break;
    }
    if (!for_jails) continue;
    const mode_t mode = name == kAgentTokenFile ? 0600 : 0644;
    if (::fchown(f.get(), 0, 0) != 0 || ::fchmod(f.get(), mode) != 0) {
      result = sys_error("snapshot folder " + dir + ": chown/chmod " + name);
      break;
    }
  }
  ::closedir(d);
  return result;
}

Status adopt_snapshot_dir(const std::string& from, const std::string& to, bool for_jails) {
  struct stat st {};
  if (::lstat(from.c_str(), &st) != 0) return sys_error("snapshot " + from);
  if (!S_ISDIR(st.st_mode))
    return as_invalid_input(make_error("snapshot " + from + " is not a folder"));
  // rename() never follows a link in the last component, and `to` is in a folder only the
  // daemon writes.
  if (::rename(from.c_str(), to.c_str()) != 0) return sys_error("move snapshot to " + to);
  if (Status s = seal_snapshot_dir(to, for_jails); !s.ok()) {
    (void)remove_tree(to);
    return s;
  }
  return {};
}

}  // namespace carapace::service
