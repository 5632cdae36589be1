// FileServer: names and attributes -- LOOKUP, GETATTR, SETATTR, READLINK, SYMLINK, MKNOD,
// MKDIR, UNLINK, RMDIR, RENAME(2), LINK (file_server.h). Every host call is relative to an
// inode's O_PATH fd, with one validated component (host_fs.h; docs/security.md #28, #55, #56).
#include <fcntl.h>
#include <linux/limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <vector>

#include "vmm/devices/fs/file_server.h"
#include "vmm/devices/fs/host_fs.h"

namespace carapace::fs {

namespace {
// Permission bits a guest may give: never setuid or setgid (docs/security.md #58); sticky is
// harmless.
constexpr mode_t kAllowedPerm = 01777;
}  // namespace

FsResult<Inode*> FileServer::inode(uint64_t nodeid) {
  Inode* n = inodes_.get(nodeid);
  if (n == nullptr) return fs_error(EBADF);  // a node id we never gave, or one forgotten
  return n;
}

FsResult<Inode*> FileServer::dir_inode(uint64_t nodeid) {
  Inode* n = TRY(inode(nodeid));
  if (n->type != S_IFDIR) return fs_error(ENOTDIR);
  return n;
}

FsResult<Handle*> FileServer::handle_of(uint64_t fh, uint64_t nodeid, bool dir) {
  Handle* h = handles_.get(fh);
  // A handle belongs to the inode it was opened on: a guest cannot read file A through a
  // request about file B.
  if (h == nullptr || h->dir != dir || (nodeid != 0 && h->nodeid != nodeid)) return fs_error(EBADF);
  return h;
}

void FileServer::fill_attr(const struct stat& st, fuse_attr& a) const {
  a.ino = st.st_ino;
  a.size = static_cast<uint64_t>(st.st_size);
  a.blocks = static_cast<uint64_t>(st.st_blocks);
  a.atime = static_cast<uint64_t>(st.st_atim.tv_sec);
  a.mtime = static_cast<uint64_t>(st.st_mtim.tv_sec);
  a.ctime = static_cast<uint64_t>(st.st_ctim.tv_sec);
  a.atimensec = static_cast<uint32_t>(st.st_atim.tv_nsec);
  a.mtimensec = static_cast<uint32_t>(st.st_mtim.tv_nsec);
  a.ctimensec = static_cast<uint32_t>(st.st_ctim.tv_nsec);
  a.mode = st.st_mode;
  a.nlink = static_cast<uint32_t>(st.st_nlink);
  a.uid = guest_uid(st.st_uid);
  a.gid = guest_gid(st.st_gid);
  a.rdev = 0;  // never a device
  a.blksize = static_cast<uint32_t>(st.st_blksize);
}

void FileServer::fill_entry(uint64_t nodeid, const struct stat& st, fuse_entry_out& out) const {
  out = {};
  out.nodeid = nodeid;
  out.generation = 0;
  out.entry_valid = config_.attr_timeout_s;
  out.attr_valid = config_.attr_timeout_s;
  fill_attr(st, out.attr);
}

FsStatus FileServer::lookup_entry(int dirfd, const std::string& name, fuse_entry_out& out) {
  struct stat st {};
  UniqueFd fd = TRY(lookup_beneath(dirfd, name, st));
  const uint64_t id = TRY(inodes_.add_lookup(std::move(fd), st));
  fill_entry(id, st, out);
  return fs_ok();
}

FsStatus FileServer::op_lookup(Req& r) {
  Inode* dir = TRY(dir_inode(r.in.nodeid));
  const std::string name = TRY(r.args.name());
  TRY_STATUS(r.args.expect_end());
  if (r.out.capacity() < sizeof(fuse_entry_out)) return fs_error(EINVAL);
  fuse_entry_out out{};
  TRY_STATUS(lookup_entry(dir->fd.get(), name, out));
  return r.out.send_obj(out);
}

FsStatus FileServer::op_getattr(Req& r) {
  (void)TRY(r.args.read<fuse_getattr_in>());
  TRY_STATUS(r.args.expect_end());
  Inode* n = TRY(inode(r.in.nodeid));
  const struct stat st = TRY(stat_fd(n->fd.get()));
  fuse_attr_out out{};
  out.attr_valid = config_.attr_timeout_s;
  fill_attr(st, out.attr);
  return r.out.send_obj(out);
}

FsStatus FileServer::op_setattr(Req& r) {
  auto in = TRY(r.args.read<fuse_setattr_in>());
  TRY_STATUS(r.args.expect_end());
  Inode* n = TRY(inode(r.in.nodeid));
  if (r.out.capacity() < sizeof(fuse_attr_out)) return fs_error(EINVAL);
  const struct stat before = TRY(stat_fd(n->fd.get()));
  const bool is_link = n->type == S_IFLNK;
  const std::string self = std::to_string(n->fd.get());  // in /proc/self/fd (host_fs.h)

  if ((in.valid & FATTR_MODE) != 0) {
    // docs/security.md #58: setuid/setgid refused outright rather than silently dropped.
    if ((in.mode & (S_ISUID | S_ISGID)) != 0) return fs_error(EPERM);
    if (is_link) return fs_error(EOPNOTSUPP);  // Linux has no symlink permissions
    if (::fchmodat(proc_fd_.get(), self.c_str(), in.mode & kAllowedPerm, 0) < 0)
      return last_errno();
  }
  if ((in.valid & (FATTR_UID | FATTR_GID)) != 0) {
    // Ownership stays the host's: a change to anything but the current owner is refused.
    const bool uid_same = (in.valid & FATTR_UID) == 0 || in.uid == guest_uid(before.st_uid);
    const bool gid_same = (in.valid & FATTR_GID) == 0 || in.gid == guest_gid(before.st_gid);
    if (!uid_same || !gid_same) return fs_error(EPERM);
  }
  if ((in.valid & FATTR_SIZE) != 0) {
    if (n->type != S_IFREG) return fs_error(n->type == S_IFDIR ? EISDIR : EINVAL);
    // rw-nodelete: making a file shorter destroys data (README.md).
    if (nodelete() && in.size < static_cast<uint64_t>(before.st_size)) return fs_error(EPERM);
    if (in.size > static_cast<uint64_t>(INT64_MAX)) return fs_error(EFBIG);
    int fd = -1;
    UniqueFd opened;
    if ((in.valid & FATTR_FH) != 0) {
      Handle* h = TRY(handle_of(in.fh, r.in.nodeid, false));
      fd = h->fd.get();
    } else {
      opened = TRY(reopen(proc_fd_.get(), n->fd.get(), O_WRONLY));
      fd = opened.get();
    }
    if (::ftruncate(fd, static_cast<off_t>(in.size)) < 0) return last_errno();
  }
  if ((in.valid & (FATTR_ATIME | FATTR_MTIME)) != 0) {
    struct timespec ts[2];
    ts[0].tv_nsec = UTIME_OMIT;
    ts[1].tv_nsec = UTIME_OMIT;
    if ((in.valid & FATTR_ATIME) != 0) {
      ts[0].tv_sec = static_cast<time_t>(in.atime);
      ts[0].tv_nsec = (in.valid & FATTR_ATIME_NOW) != 0 ? UTIME_NOW : in.atimensec % 1000000000;
    }
    if ((in.valid & FATTR_MTIME) != 0) {
      ts[1].tv_sec = static_cast<time_t>(in.mtime);
      ts[1].tv_nsec = (in.valid & FATTR_MTIME_NOW) != 0 ? UTIME_NOW : in.mtimensec % 1000000000;
    }
    // Through the inode's own fd: /proc/self/fd/N of a symlink's O_PATH fd is the link itself
    // (the magic link jumps to it and is not followed again), so a symlink's times change and
    // its target's never do (`cp -a` and `tar` set both).
    if (::utimensat(proc_fd_.get(), self.c_str(), ts, 0) < 0) return last_errno();
  }
  const struct stat after = TRY(stat_fd(n->fd.get()));
  fuse_attr_out out{};
  out.attr_valid = config_.attr_timeout_s;
  fill_attr(after, out.attr);
  return r.out.send_obj(out);
}

FsStatus FileServer::op_readlink(Req& r) {
  TRY_STATUS(r.args.expect_end());
  Inode* n = TRY(inode(r.in.nodeid));
  if (n->type != S_IFLNK) return fs_error(EINVAL);
  std::vector<char> buf(PATH_MAX);
  // The link's own text, read through its O_PATH fd; never followed (docs/security.md #56).
  const ssize_t len = ::readlinkat(n->fd.get(), "", buf.data(), buf.size());
  if (len < 0) return last_errno();
  return r.out.send({reinterpret_cast<const uint8_t*>(buf.data()), static_cast<size_t>(len)});
}

FsStatus FileServer::op_symlink(Req& r) {
  Inode* dir = TRY(dir_inode(r.in.nodeid));
  // FUSE_SYMLINK: the new name, then the link's text (any bytes but NUL, PATH_MAX at most). The
  // text is stored, never resolved on the host, so an absolute or ".." target is harmless here.
  const std::string name = TRY(r.args.name());
  const std::string target = TRY(r.args.cstring(PATH_MAX - 1));
  TRY_STATUS(r.args.expect_end());
  if (r.out.capacity() < sizeof(fuse_entry_out)) return fs_error(EINVAL);
  // A new inode: refuse before making it, so a full table leaves the share unchanged.
  if (inodes_.size() >= inodes_.max()) return fs_error(ENFILE);
  if (::symlinkat(target.c_str(), dir->fd.get(), name.c_str()) < 0) return last_errno();
  fuse_entry_out out{};
  TRY_STATUS(lookup_entry(dir->fd.get(), name, out));
  return r.out.send_obj(out);
}

FsStatus FileServer::op_mknod(Req& r) {
  auto in = TRY(r.args.read<fuse_mknod_in>());
  Inode* dir = TRY(dir_inode(r.in.nodeid));
  const std::string name = TRY(r.args.name());
  TRY_STATUS(r.args.expect_end());
  // docs/security.md #58: regular files only; no device nodes, FIFOs or sockets on the host.
  if ((in.mode & S_IFMT) != S_IFREG) return fs_error(EPERM);
  if (r.out.capacity() < sizeof(fuse_entry_out)) return fs_error(EINVAL);
  // A new inode: refuse before making it, so a full table leaves the share unchanged.
  if (inodes_.size() >= inodes_.max()) return fs_error(ENFILE);
  const mode_t perm = in.mode & ~in.umask & 0777;
  if (::mknodat(dir->fd.get(), name.c_str(), S_IFREG | perm, 0) < 0) return last_errno();
  fuse_entry_out out{};
  TRY_STATUS(lookup_entry(dir->fd.get(), name, out));
  return r.out.send_obj(out);
}

FsStatus FileServer::op_mkdir(Req& r) {
  auto in = TRY(r.args.read<fuse_mkdir_in>());
  Inode* dir = TRY(dir_inode(r.in.nodeid));
  const std::string name = TRY(r.args.name());
  TRY_STATUS(r.args.expect_end());
  if (r.out.capacity() < sizeof(fuse_entry_out)) return fs_error(EINVAL);
  // A new inode: refuse before making it, so a full table leaves the share unchanged.
  if (inodes_.size() >= inodes_.max()) return fs_error(ENFILE);
  const mode_t perm = in.mode & ~in.umask & kAllowedPerm;
  if (::mkdirat(dir->fd.get(), name.c_str(), perm) < 0) return last_errno();
  fuse_entry_out out{};
  TRY_STATUS(lookup_entry(dir->fd.get(), name, out));
  return r.out.send_obj(out);
}

FsStatus FileServer::op_unlink(Req& r, bool rmdir) {
  Inode* dir = TRY(dir_inode(r.in.nodeid));
  const std::string name = TRY(r.args.name());
  TRY_STATUS(r.args.expect_end());
  if (!r.out.header_fits()) return fs_error(EINVAL);
  // unlinkat never follows the last component: a symlink is removed, not its target.
  if (::unlinkat(dir->fd.get(), name.c_str(), rmdir ? AT_REMOVEDIR : 0) < 0) return last_errno();
  return r.out.send({});
}

FsStatus FileServer::op_rename(Req& r, bool v2) {
  uint64_t newdir_id = 0;
  uint32_t flags = 0;
  if (v2) {
    auto in = TRY(r.args.read<fuse_rename2_in>());
    newdir_id = in.newdir;
    flags = in.flags;
  } else {
    newdir_id = TRY(r.args.read<fuse_rename_in>()).newdir;
  }
  // Both directories are inodes of ours, so nothing can be renamed out of the share or in from
  // outside it (a node id we never gave is EBADF).
  Inode* olddir = TRY(dir_inode(r.in.nodeid));
  Inode* newdir = TRY(dir_inode(newdir_id));
  const std::string oldname = TRY(r.args.name());
  const std::string newname = TRY(r.args.name());
  TRY_STATUS(r.args.expect_end());
  // RENAME_EXCHANGE would swap in a name the guest did not create; WHITEOUT makes a device node.
  if ((flags & ~static_cast<uint32_t>(RENAME_NOREPLACE)) != 0) return fs_error(EINVAL);
  if (!r.out.header_fits()) return fs_error(EINVAL);
  // rw-nodelete: never over an existing name (that would delete it); a rename to a new name keeps
  // every byte and is allowed (README.md, What counts as deleting).
  if (nodelete()) flags |= RENAME_NOREPLACE;
  if (::renameat2(olddir->fd.get(), oldname.c_str(), newdir->fd.get(), newname.c_str(), flags) <
      0) {
    if (errno == EEXIST && nodelete()) return fs_error(EPERM);
    return last_errno();
  }
  return r.out.send({});
}

FsStatus FileServer::op_link(Req& r) {
  auto in = TRY(r.args.read<fuse_link_in>());
  Inode* target = TRY(inode(in.oldnodeid));
  Inode* dir = TRY(dir_inode(r.in.nodeid));
  const std::string name = TRY(r.args.name());
  TRY_STATUS(r.args.expect_end());
  if (target->type == S_IFDIR) return fs_error(EPERM);
  if (r.out.capacity() < sizeof(fuse_entry_out)) return fs_error(EINVAL);
  // The source is an inode of ours (so inside the share), named by its O_PATH fd through
  // /proc/self/fd; AT_EMPTY_PATH would need CAP_DAC_READ_SEARCH.
  const std::string self = std::to_string(target->fd.get());
  if (::linkat(proc_fd_.get(), self.c_str(), dir->fd.get(), name.c_str(), AT_SYMLINK_FOLLOW) < 0)
    return last_errno();
  fuse_entry_out out{};
  TRY_STATUS(lookup_entry(dir->fd.get(), name, out));
  return r.out.send_obj(out);
}

}  // namespace carapace::fs
