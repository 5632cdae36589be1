#include "daemon/core/mounts.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace carapace::service {
namespace {

bool at_or_beneath(const std::string& path, const std::string& root) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

// Why openat2 refused the component that ends at `so_far`, in the words of the API.
std::string refusal(int err, const std::string& so_far) {
  switch (err) {
    case ELOOP:
      return so_far + " is a symlink (never followed)";
    case ENOTDIR:
      return so_far + " is not a folder";
    case ENOENT:
      return so_far + " does not exist";
    case EXDEV:
      return so_far + " is a mount point (another file system is not shared through this root)";
    default:
      return so_far + ": " + strerror(err);
  }
}

// One host folder, opened from its root's descriptor a component at a time.
ApiResult<UniqueFd> open_beneath_root(const std::string& root, const std::string& host,
                                      const std::string& field) {
  UniqueFd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return internal("mount root " + root + " cannot be opened: " + strerror(errno));
  if (host.size() == root.size()) return dir;  // the root itself
  for (size_t start = root.size() + 1;;) {
    size_t end = host.find('/', start);
    if (end == std::string::npos) end = host.size();
    const std::string name = host.substr(start, end - start);
    open_how how{};
    how.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
    UniqueFd next(
        static_cast<int>(::syscall(SYS_openat2, dir.get(), name.c_str(), &how, sizeof how)));
    if (!next.valid()) {
      int err = errno;
      // O_NOFOLLOW | O_DIRECTORY says ENOTDIR for a symlink last: name it for what it is.
      struct stat st {};
      if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        err = ELOOP;
      return bad_request(field + ": " + refusal(err, host.substr(0, end)));
    }
    dir = std::move(next);
    if (end == host.size()) return dir;
    start = end + 1;
  }
}

}  // namespace

ApiStatus check_mount_requests(const std::vector<MountRequest>& mounts, const std::string& field) {
  std::vector<ShareSpec> shares;
  for (size_t i = 0; i < mounts.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "].host_path";
    if (Status s = check_share_path_syntax(mounts[i].host_path); !s.ok())
      return bad_request(f + ": " + s.error().message);
    if (mounts[i].host_path == "/") return bad_request(f + ": cannot be / (the host's root)");
    shares.push_back({mounts[i].host_path, mounts[i].guest_path, mounts[i].mode});
  }
  if (Status s = check_share_list(shares, field); !s.ok()) return bad_request(s.error().message);
  return {};
}

ApiResult<std::vector<SandboxMount>> resolve_mounts(const std::vector<MountRequest>& mounts,
                                                    const std::vector<std::string>& mount_roots,
                                                    const std::string& field) {
  std::vector<SandboxMount> out;
  if (mounts.empty()) return out;
  TRY_STATUS(check_mount_requests(mounts, field));
  if (mount_roots.empty())
    return bad_request("mounts are not enabled: the daemon's config names no mount_roots");
  for (size_t i = 0; i < mounts.size(); ++i) {
    const MountRequest& m = mounts[i];
    const std::string f = field + "[" + std::to_string(i) + "].host_path";
    const std::string* root = nullptr;
    for (const std::string& r : mount_roots)
      if (at_or_beneath(m.host_path, r) && (root == nullptr || r.size() > root->size())) root = &r;
    if (root == nullptr)
      return bad_request(f + ": " + m.host_path +
                         " is not beneath any of the daemon's mount_roots");
    UniqueFd dir = TRY(open_beneath_root(*root, m.host_path, f));
    out.push_back(
        {m.host_path, std::make_shared<const UniqueFd>(std::move(dir)), m.guest_path, m.mode});
  }
  return out;
}

std::vector<MountRequest> mount_views(const std::vector<SandboxMount>& mounts) {
  std::vector<MountRequest> out;
  for (const SandboxMount& m : mounts)
    out.push_back({m.host_path, m.guest_path, m.mode});
  return out;
}

std::vector<SandboxMount> inherited_mounts(const std::vector<SandboxMount>& parent,
                                           bool keep_modes) {
  std::vector<SandboxMount> out = parent;
  if (!keep_modes)
    for (SandboxMount& m : out)
      m.mode = MountMode::kRo;
  return out;
}

}  // namespace carapace::service
