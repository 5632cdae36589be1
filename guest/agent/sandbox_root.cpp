#include "guest/agent/sandbox_root.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <vector>

#include "common/agent/errors.h"
#include "common/agent/wire.h"

namespace carapace::agent {
namespace {

std::vector<std::string_view> split(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view part = path.substr(i, j - i);
    if (!part.empty() && part != ".") parts.push_back(part);
    i = j + 1;
  }
  return parts;
}

Error refused(std::string_view path, std::string_view why) {
  return protocol_error(code::kPathRefused, "'" + std::string(path) + "': " + std::string(why));
}

}  // namespace

Result<UniqueFd> open_beneath(int dirfd, const std::string& path, uint64_t flags, mode_t mode) {
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  long fd;
  do {
    // Called directly: glibc 2.36 has no openat2 wrapper.
    fd = ::syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return sys_error("open '" + path + "'");
  return UniqueFd(static_cast<int>(fd));
}

Result<SandboxRoot> SandboxRoot::open(const std::string& path) {
  char real[PATH_MAX];
  if (!::realpath(path.c_str(), real)) return sys_error("sandbox root " + path);
  int fd = ::open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return sys_error("open sandbox root " + std::string(real));
  return SandboxRoot(real, UniqueFd(fd));
}

Result<std::string> SandboxRoot::relative(std::string_view path) const {
  if (path.size() > kMaxPathBytes) return refused(path.substr(0, 64), "path too long");
  if (path.find('\0') != std::string_view::npos) return refused("", "NUL byte in path");
  std::vector<std::string_view> parts = split(path);
  for (std::string_view p : parts)
    if (p == "..") return refused(path, "'..' is not allowed");
  if (path.starts_with('/')) {
    std::vector<std::string_view> root = split(path_);
    bool inside = parts.size() >= root.size();
    for (size_t i = 0; inside && i < root.size(); ++i)
      inside = parts[i] == root[i];
    if (!inside) return refused(path, "absolute path outside the sandbox root " + path_);
    parts.erase(parts.begin(), parts.begin() + static_cast<ptrdiff_t>(root.size()));
  }
  std::string rel;
  for (std::string_view p : parts) {
    if (!rel.empty()) rel += '/';
    rel += p;
  }
  return rel.empty() ? std::string(".") : rel;
}

Status SandboxRoot::add_mount(std::string_view path) {
  std::string rel = TRY(relative(path));
  if (rel.size() == 1 && rel[0] == '.')
    return refused(path, "the sandbox root itself cannot be a mount point");
  // The mount point is reached by the kernel beneath the root (or the sub-root above it) with
  // symlinks refused, then entered: O_PATH of the mount point gives the mounted root, since an
  // open crosses onto whatever is mounted on its last component.
  std::shared_ptr<SubRoot> keep;
  std::string rest = rel;
  int base = base_for(rest, keep);
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  long fd;
  do {
    fd = ::syscall(SYS_openat2, base, rest.c_str(), &how, sizeof how);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return sys_error("open mount point '" + rel + "'");
  auto sub = std::make_shared<SubRoot>(SubRoot{rel, UniqueFd(static_cast<int>(fd))});
  std::lock_guard<std::mutex> lock(subs_->mu);
  for (auto& s : subs_->list)
    if (s->rel == rel) {
      s = std::move(sub);  // mounted again over the same point: the newest mount is what shows
      return {};
    }
  subs_->list.push_back(std::move(sub));
  return {};
}

bool SandboxRoot::remove_mount(std::string_view path) {
  auto rel = relative(path);
  if (!rel.ok()) return false;
  std::lock_guard<std::mutex> lock(subs_->mu);
  for (auto it = subs_->list.begin(); it != subs_->list.end(); ++it)
    if ((*it)->rel == *rel) {
      subs_->list.erase(it);
      return true;
    }
  return false;
}

int SandboxRoot::base_for(std::string& rel, std::shared_ptr<SubRoot>& keep) const {
  std::lock_guard<std::mutex> lock(subs_->mu);
  size_t best = 0;
  for (const auto& s : subs_->list) {
    const bool inside =
        rel == s->rel || (rel.size() > s->rel.size() &&
                          rel.compare(0, s->rel.size(), s->rel) == 0 && rel[s->rel.size()] == '/');
    if (inside && s->rel.size() > best) {
      best = s->rel.size();
      keep = s;
    }
  }
  if (!keep) return fd_.get();
  rel = rel.size() == best ? std::string(".") : rel.substr(best + 1);
  return keep->fd.get();
}

Result<UniqueFd> SandboxRoot::open(std::string_view path, uint64_t flags, mode_t mode) const {
  std::string rel = TRY(relative(path));
  std::shared_ptr<SubRoot> keep;
  int base = base_for(rel, keep);
  return open_beneath(base, rel, flags, mode);
}

Result<UniqueFd> SandboxRoot::open_parent(std::string_view path, bool parents,
                                          std::string* leaf) const {
  std::string rel = TRY(relative(path));
  if (rel == ".") return protocol_error(code::kIsDirectory, "the sandbox root is a directory");
  std::shared_ptr<SubRoot> keep;
  const int base = base_for(rel, keep);
  if (rel == ".")
    return protocol_error(code::kIsDirectory, "'" + std::string(path) + "' is a mount point");
  size_t slash = rel.rfind('/');
  *leaf = slash == std::string::npos ? rel : rel.substr(slash + 1);
  std::string dir = slash == std::string::npos ? "." : rel.substr(0, slash);
  if (!parents) return open_beneath(base, dir, O_PATH | O_DIRECTORY);

  UniqueFd cur = TRY(open_beneath(base, ".", O_PATH | O_DIRECTORY));
  for (std::string_view part : split(dir)) {
    std::string name(part);
    // mkdirat never follows a symlink in its last component; open_beneath refuses one.
    if (::mkdirat(cur.get(), name.c_str(), 0755) < 0 && errno != EEXIST)
      return sys_error("mkdir '" + name + "'");
    cur = TRY(open_beneath(cur.get(), name, O_PATH | O_DIRECTORY));
  }
  return cur;
}

}  // namespace carapace::agent
