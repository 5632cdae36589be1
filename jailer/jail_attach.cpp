#include "jailer/jail_attach.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "common/base/flag_values.h"
#include "common/base/unique_fd.h"
#include "jailer/supervisor.h"

namespace carapace {

const char kJailAttachUsage[] =
    "usage: carapace jail attach --pid PID --source-fd N --target DIR [--read-only]\n"
    "                            [--idmap FROM_UID:FROM_GID:TO_UID:TO_GID]\n"
    "\n"
    "Mounts the folder open on descriptor N (inherited) onto DIR inside the mount namespace of\n"
    "process PID (a jailed process), nosuid and nodev, read-only with --read-only. With --idmap\n"
    "the mount shows files owned by FROM as owned by TO, and files TO creates are FROM's on the\n"
    "host (an id-mapped mount). The host's own mounts are untouched. Needs root.\n";

namespace {

Result<AttachIdMap> parse_idmap(const std::string& v) {
  AttachIdMap m;
  uint64_t ids[4];
  size_t start = 0;
  for (int i = 0; i < 4; ++i) {
    size_t colon = v.find(':', start);
    if ((i < 3) != (colon != std::string::npos))
      return as_invalid_input(make_error("--idmap: want FROM_UID:FROM_GID:TO_UID:TO_GID"));
    std::string part = v.substr(start, i < 3 ? colon - start : std::string::npos);
    ids[i] = TRY(parse_u64("--idmap", part));
    if (ids[i] >= 0xffffffffull) return as_invalid_input(make_error("--idmap: id out of range"));
    start = colon + 1;
  }
  m.from_uid = static_cast<uid_t>(ids[0]);
  m.from_gid = static_cast<gid_t>(ids[1]);
  m.to_uid = static_cast<uid_t>(ids[2]);
  m.to_gid = static_cast<gid_t>(ids[3]);
  return m;
}

Status write_file(int dirfd, const std::string& path, const std::string& text) {
  UniqueFd fd(::openat(dirfd, path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return sys_error("open " + path);
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return sys_error("write " + path);
  return {};
}

// A user namespace whose only mapping is `map` (FROM inside, TO outside), as the id mapping of a
// mount (mount_setattr MOUNT_ATTR_IDMAP): on-disk FROM shows as TO, and TO writes FROM. It is
// made by a child that unshares and waits; its namespace is kept by the descriptor alone.
// `proc` is the host's /proc (the jail's shows only the jail's own processes).
Result<UniqueFd> idmap_userns(const AttachIdMap& map, int proc) {
  int ready[2], hold[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return sys_error("pipe");
  UniqueFd ready_r(ready[0]), ready_w(ready[1]);
  if (::pipe2(hold, O_CLOEXEC) != 0) return sys_error("pipe");
  UniqueFd hold_r(hold[0]), hold_w(hold[1]);
  pid_t child = ::fork();
  if (child < 0) return sys_error("fork");
  if (child == 0) {
    // Only the read end of `hold` may stay, or its EOF never comes.
    ::close(hold_w.get());
    ::close(ready_r.get());
    // 0 when the namespace is made, else the errno (all fit a byte).
    unsigned char c = ::unshare(CLONE_NEWUSER) == 0 ? 0 : static_cast<unsigned char>(errno);
    (void)::write(ready_w.get(), &c, 1);
    (void)::read(hold_r.get(), &c, 1);  // until the parent closes its end
    _exit(0);
  }
  ready_w.reset();
  hold_r.reset();
  auto reap = [&] {
    hold_w.reset();
    int st = 0;
    while (::waitpid(child, &st, 0) < 0 && errno == EINTR) {
    }
  };
  unsigned char c = 0;
  if (::read(ready_r.get(), &c, 1) != 1) {
    reap();
    return make_error("the id-map child ended early");
  }
  if (c != 0) {
    reap();
    return sys_error("unshare(CLONE_NEWUSER) for the id mapping", c);
  }
  const std::string pid = std::to_string(child);
  Status s = write_file(proc, pid + "/uid_map",
                        std::to_string(map.from_uid) + " " + std::to_string(map.to_uid) + " 1\n");
  if (s.ok())
    s = write_file(proc, pid + "/gid_map",
                   std::to_string(map.from_gid) + " " + std::to_string(map.to_gid) + " 1\n");
  UniqueFd ns;
  if (s.ok()) {
    ns = UniqueFd(::openat(proc, (pid + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns.valid()) s = sys_error("open /proc/" + pid + "/ns/user");
  }
  reap();
  TRY_STATUS(s);
  return ns;
}

// In the jail's mount namespace: the id mapping, the attributes, the move onto the target.
Status attach_inside(const AttachConfig& cfg, int mnt_ns, int jail_root, int tree, int proc) {
  // Into the jail's namespace before the id-map's user namespace is made: unshare(CLONE_NEWUSER)
  // is refused to a chrooted caller (a daemon started in a chroot), and after setns our root is
  // the jail's own mount namespace root. The detached copy of the folder came from the caller's.
  if (::setns(mnt_ns, CLONE_NEWNS) != 0) return sys_error("setns into the jail");

  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (cfg.read_only ? MOUNT_ATTR_RDONLY : 0);
  attr.propagation = MS_PRIVATE;
  UniqueFd userns;
  if (cfg.idmap) {
    userns = TRY(idmap_userns(*cfg.idmap, proc));
    attr.attr_set |= MOUNT_ATTR_IDMAP;
    attr.userns_fd = static_cast<uint64_t>(userns.get());
  }
  if (::syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
    const int err = errno;
    return sys_error(cfg.idmap ? "mount_setattr (id-mapped: the file system may not support it)"
                               : "mount_setattr",
                     err);
  }

  // The target is reached from the jail's root without following any symlink: the jailed
  // process owns the folder it sits in and could have swapped a name for a link.
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  long target_fd = ::syscall(SYS_openat2, jail_root, cfg.target.c_str(), &how, sizeof how);
  if (target_fd < 0) return sys_error("open the target " + cfg.target + " in the jail");
  UniqueFd target(static_cast<int>(target_fd));
  if (::syscall(SYS_move_mount, tree, "", target.get(), "",
                MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
    return sys_error("move_mount onto " + cfg.target);
  return {};
}

}  // namespace

Result<AttachConfig> parse_attach_args(const std::vector<std::string>& args) {
  AttachConfig cfg;
  bool have_pid = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      cfg.help = true;
      return cfg;
    }
    if (a == "--read-only") {
      cfg.read_only = true;
      continue;
    }
    if (i + 1 >= args.size()) return as_invalid_input(make_error(a + ": needs a value"));
    const std::string& v = args[++i];
    if (a == "--pid") {
      uint64_t p = TRY(parse_u64(a, v));
      if (p < 2 || p > (1u << 22)) return as_invalid_input(make_error("--pid: out of range"));
      cfg.pid = static_cast<pid_t>(p);
      have_pid = true;
    } else if (a == "--source-fd") {
      uint64_t fd = TRY(parse_u64(a, v));
      if (fd < 3 || fd > 1024) return as_invalid_input(make_error("--source-fd: 3..1024"));
      cfg.source_fd = static_cast<int>(fd);
    } else if (a == "--target") {
      if (v.empty() || v[0] != '/' || v.find("/..") != std::string::npos)
        return as_invalid_input(make_error("--target: an absolute path without '..'"));
      cfg.target = v;
    } else if (a == "--idmap") {
      cfg.idmap = TRY(parse_idmap(v));
    } else {
      return as_invalid_input(make_error("unknown flag " + a));
    }
  }
  if (!have_pid || cfg.source_fd < 0 || cfg.target.empty())
    return as_invalid_input(make_error("--pid, --source-fd and --target are required"));
  return cfg;
}

Status run_attach(const AttachConfig& cfg) {
  struct stat st {};
  if (::fstat(cfg.source_fd, &st) != 0) return sys_error("the source descriptor");
  if (!S_ISDIR(st.st_mode)) return as_invalid_input(make_error("the source is not a directory"));
  // The jail's namespace is opened first: the process must still be the one meant.
  UniqueFd mnt_ns(
      ::open(("/proc/" + std::to_string(cfg.pid) + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC));
  if (!mnt_ns.valid())
    return sys_error("open the mount namespace of pid " + std::to_string(cfg.pid));
  // Its root: targets are resolved beneath it. The namespace's own root need not be the jail's
  // (a jail made by a chrooted caller pivots below it), the process's root is.
  UniqueFd jail_root(::open(("/proc/" + std::to_string(cfg.pid) + "/root").c_str(),
                            O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!jail_root.valid()) return sys_error("open the root of pid " + std::to_string(cfg.pid));

  // A detached copy of the folder's mount, this folder only (no submounts: the file server
  // refuses to cross mounts anyway).
  long tree_fd = ::syscall(SYS_open_tree, cfg.source_fd, "",
                           OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
  if (tree_fd < 0) return sys_error("open_tree of the source");
  UniqueFd tree(static_cast<int>(tree_fd));

  // The rest happens in a child: setns leaves a process in the jail's mount namespace, where
  // nothing of the host is (a sanitizer's exit-time checks, which read /proc, among it). The
  // child reports a failure as one line on a pipe.
  UniqueFd proc(::open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!proc.valid()) return sys_error("open /proc");
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return sys_error("pipe");
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);
  const pid_t child = ::fork();
  if (child < 0) return sys_error("fork");
  if (child == 0) {
    err_r.reset();
    Status done = attach_inside(cfg, mnt_ns.get(), jail_root.get(), tree.get(), proc.get());
    if (done.ok()) ::_exit(0);
    const std::string line = done.error().describe();
    (void)!::write(err_w.get(), line.data(), line.size());
    ::_exit(done.error().kind == ErrorKind::kInvalidInput ? 2 : 1);
  }
  err_w.reset();
  const std::string said = read_until_eof(err_r.get());
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  if (said.empty()) return make_error("the attaching child ended without a word");
  Error e = make_error(said);
  return WIFEXITED(status) && WEXITSTATUS(status) == 2 ? as_invalid_input(std::move(e)) : e;
}

int cmd_jail_attach(const std::vector<std::string>& args) {
  auto cfg = parse_attach_args(args);
  if (auto status = supervisor_command_ends(
          {"carapace jail attach: error", kJailAttachUsage, "must run as root (it mounts)"}, cfg))
    return *status;
  Status s = run_attach(*cfg);
  if (!s.ok()) {
    std::fprintf(stderr, "carapace jail attach: error: %s\n", s.error().describe().c_str());
    return 1;
  }
  return 0;
}

}  // namespace carapace
