#include "process_sandbox/share_mounts.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

namespace carapace {
namespace {

Error bad(const std::string& m) {
  return as_invalid_input(make_error(m));
}

Status write_proc_file(const std::string& path, const std::string& text) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return sys_error("open " + path);
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return sys_error("write " + path);
  return ok_status();
}

// A child that only holds a fresh user namespace open until its pipe closes; reaped on every way
// out, so no helper outlives the share it was made for.
class UsernsHolder {
 public:
  ~UsernsHolder() {
    hold_.reset();
    if (pid_ <= 0) return;
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  Status start() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return sys_error("pipe");
    UniqueFd r(p[0]);
    hold_ = UniqueFd(p[1]);
    clone_args args{};
    args.flags = CLONE_NEWUSER;
    args.exit_signal = SIGCHLD;
    fflush(nullptr);
    long pid = ::syscall(SYS_clone3, &args, sizeof args);
    if (pid < 0) return sys_error("clone3(CLONE_NEWUSER) for an idmapped mount");
    if (pid == 0) {
      hold_.reset();
      char c;
      while (::read(r.get(), &c, 1) < 0 && errno == EINTR) {
      }
      ::_exit(0);
    }
    pid_ = static_cast<pid_t>(pid);
    return ok_status();
  }
  pid_t pid() const { return pid_; }

 private:
  UniqueFd hold_;
  pid_t pid_ = -1;
};

// The user namespace of MOUNT_ATTR_IDMAP: the share's owner on disk (`from`) is the sandbox's
// host id (`to`) through the mount, and back for what the sandbox creates. Nothing else is
// mapped, so no other owner's files can be written as their owner.
Result<UniqueFd> idmap_userns(uid_t from_uid, uid_t to_uid, gid_t from_gid, gid_t to_gid) {
  UsernsHolder holder;
  TRY_STATUS(holder.start());
  const std::string proc = "/proc/" + std::to_string(holder.pid());
  TRY_STATUS(write_proc_file(proc + "/uid_map",
                             std::to_string(from_uid) + " " + std::to_string(to_uid) + " 1\n"));
  TRY_STATUS(write_proc_file(proc + "/gid_map",
                             std::to_string(from_gid) + " " + std::to_string(to_gid) + " 1\n"));
  UniqueFd ns(::open((proc + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns.valid()) return sys_error("open " + proc + "/ns/user");
  return ns;
}

Result<PreparedShare> prepare_one(const ShareSpec& spec, UniqueFd dir, uid_t uid, gid_t gid) {
  const std::string what = "--mount host=" + spec.host;
  struct stat st {};
  if (::fstat(dir.get(), &st) != 0) return sys_error(what + ": fstat");
  PreparedShare p;
  p.spec = spec;
  p.owner_uid = st.st_uid;
  p.owner_gid = st.st_gid;
  // The folder's own mount only, never its submounts: what is shared is that one file system.
  p.tree =
      UniqueFd(::open_tree(dir.get(), "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH));
  if (!p.tree.valid()) return sys_error(what + ": open_tree");
  UniqueFd ns = TRY(idmap_userns(st.st_uid, uid, st.st_gid, gid));
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  if (spec.mode == ShareMode::kRo) attr.attr_set |= MOUNT_ATTR_RDONLY;
  // Private: a mount the host makes later beneath the folder does not show up in the sandbox.
  attr.propagation = MS_PRIVATE;
  attr.userns_fd = static_cast<uint64_t>(ns.get());
  if (::mount_setattr(p.tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
    const int err = errno;
    if (err == EINVAL || err == EOPNOTSUPP || err == ENOSYS)
      return bad(what + ": the kernel or its file system refuses an idmapped mount (" +
                 strerror(err) + "); it cannot be shared");
    return sys_error(what + ": mount_setattr", err);
  }
  return p;
}

// `guest`'s folder beneath `root`, made where missing, one component at a time: a symlink on the
// way is ELOOP rather than followed, wherever it points.
Result<UniqueFd> mount_point(const std::string& root, const std::string& guest) {
  UniqueFd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return sys_error("open " + root);
  size_t start = 1;
  while (start < guest.size()) {
    size_t end = guest.find('/', start);
    if (end == std::string::npos) end = guest.size();
    const std::string name = guest.substr(start, end - start);
    const std::string so_far = guest.substr(0, end);
    if (::mkdirat(dir.get(), name.c_str(), 0755) != 0 && errno != EEXIST)
      return sys_error("mount point " + so_far);
    open_how how{};
    how.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    UniqueFd next(
        static_cast<int>(::syscall(SYS_openat2, dir.get(), name.c_str(), &how, sizeof how)));
    if (!next.valid()) {
      if (errno == ELOOP || errno == ENOTDIR)
        return bad("--mount guest=" + guest + ": " + so_far +
                   " is a symlink or not a folder in the sandbox's image");
      return sys_error("mount point " + so_far);
    }
    dir = std::move(next);
    start = end + 1;
  }
  return dir;
}

}  // namespace

Result<UniqueFd> open_share_dir(const ShareSpec& spec) {
  UniqueFd fd(::open(spec.host.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid())
    return as_invalid_input(sys_error("--mount host=" + spec.host + ": cannot open the folder"));
  return fd;
}

Result<std::vector<PreparedShare>> prepare_shares(const std::vector<ShareSpec>& shares,
                                                  std::vector<UniqueFd> dirs, uid_t sandbox_uid,
                                                  gid_t sandbox_gid) {
  if (dirs.size() != shares.size()) return make_error("prepare_shares: one folder per share");
  std::vector<PreparedShare> out;
  for (size_t i = 0; i < shares.size(); ++i)
    out.push_back(TRY(prepare_one(shares[i], std::move(dirs[i]), sandbox_uid, sandbox_gid)));
  return out;
}

Status attach_shares(const std::string& root, std::vector<PreparedShare>& shares) {
  for (PreparedShare& s : shares) {
    UniqueFd target = TRY(mount_point(root, s.spec.guest));
    if (::move_mount(s.tree.get(), "", target.get(), "",
                     MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
      return sys_error("--mount guest=" + s.spec.guest + ": move_mount");
    s.tree.reset();
  }
  return ok_status();
}

}  // namespace carapace
