// FileServer: open files -- OPEN, OPENDIR, CREATE, READ, WRITE, RELEASE(DIR), FSYNC(DIR), FLUSH,
// FALLOCATE, LSEEK, COPY_FILE_RANGE (file_server.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "vmm/devices/fs/file_server.h"
#include "vmm/devices/fs/host_fs.h"

namespace carapace::fs {

namespace {

// Iovecs over the next `len` bytes of a chain cursor (guest buffers, no copy). At most one per
// descriptor, which the chain already bounds.
template <typename Cursor>
FsResult<std::vector<iovec>> iovecs(Cursor& c, size_t len) {
  std::vector<iovec> iov;
  while (len > 0) {
    auto s = c.next_slice(len);
    if (!s.ok() || s->empty()) return fs_error(EINVAL);
    iov.push_back({s->data(), s->size()});
    len -= s->size();
  }
  return iov;
}

}  // namespace

FsResult<int> FileServer::open_flags(uint32_t guest, bool dir) const {
  const int acc = static_cast<int>(guest) & O_ACCMODE;
  if (acc == O_ACCMODE) return fs_error(EINVAL);
  const bool writes = acc != O_RDONLY || (guest & O_TRUNC) != 0;
  // docs/security.md #59: a read-only share refuses any open that could write.
  if (writes && !writable()) return fs_error(EROFS);
  if (dir) {
    if (writes) return fs_error(EISDIR);
    return O_RDONLY | O_DIRECTORY;
  }
  // What a guest may ask of the host open; O_CREAT/O_EXCL come only from CREATE, O_TRUNC is
  // applied by apply_trunc, O_NOATIME needs ownership, O_DIRECT alignment is the guest's problem
  // elsewhere.
  const int keep = O_ACCMODE | O_APPEND | O_NONBLOCK | O_SYNC | O_DSYNC;
  return static_cast<int>(guest) & keep;
}

FsStatus FileServer::apply_trunc(int fd, bool want) const {
  if (!want) return fs_ok();
  if (nodelete()) {
    // docs/security.md #59: truncating an existing non-empty file to zero is a delete.
    const struct stat st = TRY(stat_fd(fd));
    if (st.st_size > 0) return fs_error(EPERM);
    return fs_ok();
  }
  if (::ftruncate(fd, 0) < 0) return last_errno();
  return fs_ok();
}

FsStatus FileServer::check_overwrite(const Handle& h, uint64_t offset) const {
  if (!nodelete() || h.created || (h.flags & O_APPEND) != 0) return fs_ok();
  const struct stat st = TRY(stat_fd(h.fd.get()));
  if (offset < static_cast<uint64_t>(st.st_size)) return fs_error(EPERM);
  return fs_ok();
}

FsStatus FileServer::reply_open(Req& r, UniqueFd fd, uint64_t nodeid, bool dir, int flags,
                                bool created) {
  Handle h;
  h.fd = std::move(fd);
  h.nodeid = nodeid;
  h.dir = dir;
  h.flags = flags;
  h.created = created;
  const uint64_t fh = TRY(handles_.add(std::move(h)));
  fuse_open_out out{};
  out.fh = fh;
  return r.out.send_obj(out);
}

FsStatus FileServer::op_open(Req& r, bool dir) {
  auto in = TRY(r.args.read<fuse_open_in>());
  TRY_STATUS(r.args.expect_end());
  Inode* n = TRY(inode(r.in.nodeid));
  const int flags = TRY(open_flags(in.flags, dir));
  // Symlinks are never opened (that would follow them on the host; docs/security.md #56).
  if (n->type == S_IFLNK) return fs_error(ELOOP);
  if (dir && n->type != S_IFDIR) return fs_error(ENOTDIR);
  if (!dir && n->type == S_IFDIR) return fs_error(EISDIR);
  if (n->type != S_IFREG && n->type != S_IFDIR) return fs_error(EACCES);
  if (r.out.capacity() < sizeof(fuse_open_out)) return fs_error(EINVAL);
  if (handles_.size() >= config_.max_handles) return fs_error(EMFILE);
  UniqueFd fd = TRY(reopen(proc_fd_.get(), n->fd.get(), flags));
  // The magic link names the inode we hold; checked again all the same.
  const struct stat st = TRY(stat_fd(fd.get()));
  if (st.st_dev != n->dev || st.st_ino != n->ino) return fs_error(ESTALE);
  TRY_STATUS(apply_trunc(fd.get(), !dir && (in.flags & O_TRUNC) != 0));
  return reply_open(r, std::move(fd), r.in.nodeid, dir, flags, false);
}

FsStatus FileServer::op_create(Req& r) {
  auto in = TRY(r.args.read<fuse_create_in>());
  Inode* dir = TRY(dir_inode(r.in.nodeid));
  const std::string name = TRY(r.args.name());
  TRY_STATUS(r.args.expect_end());
  const int flags = TRY(open_flags(in.flags, false));
  if (r.out.capacity() < sizeof(fuse_entry_out) + sizeof(fuse_open_out)) return fs_error(EINVAL);
  if (handles_.size() >= config_.max_handles) return fs_error(EMFILE);
  if (inodes_.size() >= inodes_.max()) return fs_error(ENFILE);
  // docs/security.md #58: no setuid/setgid on a new file.
  const mode_t perm = in.mode & ~in.umask & 0777;
  // A new file first; an existing one (without O_EXCL) only if it is a regular file, opened
  // O_NONBLOCK so that a FIFO planted on the host cannot block the device thread.
  bool created = true;
  auto made = open_beneath(dir->fd.get(), name, flags | O_CREAT | O_EXCL, perm);
  if (!made.ok() && made.error().code == EEXIST && (in.flags & O_EXCL) == 0) {
    created = false;
    struct stat existing {};
    (void)TRY(lookup_beneath(dir->fd.get(), name, existing));  // EACCES for a FIFO, a socket
    if (!S_ISREG(existing.st_mode)) return fs_error(S_ISDIR(existing.st_mode) ? EISDIR : ELOOP);
    made = open_beneath(dir->fd.get(), name, flags | O_NONBLOCK);
  }
  if (!made.ok()) return made.take_error();
  UniqueFd fd = std::move(*made);
  const struct stat st = TRY(stat_fd(fd.get()));
  if (!S_ISREG(st.st_mode)) return fs_error(S_ISDIR(st.st_mode) ? EISDIR : EACCES);
  if ((flags & O_NONBLOCK) == 0 && ::fcntl(fd.get(), F_SETFL, flags & ~O_ACCMODE) < 0)
    return last_errno();
  if (!created) TRY_STATUS(apply_trunc(fd.get(), (in.flags & O_TRUNC) != 0));
  UniqueFd path = TRY(reopen(proc_fd_.get(), fd.get(), O_PATH));
  const uint64_t id = TRY(inodes_.add_lookup(std::move(path), st));
  Handle h;
  h.fd = std::move(fd);
  h.nodeid = id;
  h.flags = flags;
  h.created = created;
  auto fh = handles_.add(std::move(h));
  if (!fh.ok()) {
    inodes_.forget(id, 1);
    return fh.take_error();
  }
  struct {
    fuse_entry_out entry;
    fuse_open_out open;
  } out{};
  fill_entry(id, st, out.entry);
  out.open.fh = *fh;
  return r.out.send_obj(out);
}

FsStatus FileServer::op_read(Req& r) {
  auto in = TRY(r.args.read<fuse_read_in>());
  TRY_STATUS(r.args.expect_end());
  Handle* h = TRY(handle_of(in.fh, r.in.nodeid, false));
  if (in.offset > static_cast<uint64_t>(INT64_MAX)) return fs_error(EINVAL);
  const size_t len = std::min<size_t>({in.size, max_write_, r.out.capacity()});
  if (!r.out.header_fits()) return fs_error(EINVAL);
  virtio::ChainWriter body = TRY(r.out.body());
  auto iov = TRY(iovecs(body, len));
  ssize_t n = 0;
  if (!iov.empty()) {
    n = ::preadv(h->fd.get(), iov.data(), static_cast<int>(iov.size()),
                 static_cast<off_t>(in.offset));
    if (n < 0) return last_errno();
  }
  return r.out.finish(static_cast<size_t>(n));
}

FsStatus FileServer::op_write(Req& r) {
  auto in = TRY(r.args.read<fuse_write_in>());
  // docs/security.md #54: the size field must be exactly the data that follows.
  if (in.size != r.args.remaining() || in.size > max_write_) return fs_error(EINVAL);
  if (in.offset > static_cast<uint64_t>(INT64_MAX)) return fs_error(EINVAL);
  Handle* h = TRY(handle_of(in.fh, r.in.nodeid, false));
  if (r.out.capacity() < sizeof(fuse_write_out)) return fs_error(EINVAL);
  TRY_STATUS(check_overwrite(*h, in.offset));
  auto iov = TRY(iovecs(r.args.chain(), in.size));
  ssize_t n = 0;
  if (!iov.empty()) {
    n = ::pwritev(h->fd.get(), iov.data(), static_cast<int>(iov.size()),
                  static_cast<off_t>(in.offset));
    if (n < 0) return last_errno();
  }
  fuse_write_out out{};
  out.size = static_cast<uint32_t>(n);
  return r.out.send_obj(out);
}

FsStatus FileServer::op_release(Req& r, bool dir) {
  auto in = TRY(r.args.read<fuse_release_in>());
  TRY_STATUS(r.args.expect_end());
  (void)TRY(handle_of(in.fh, r.in.nodeid, dir));
  handles_.remove(in.fh);
  return r.out.send({});
}

FsStatus FileServer::op_fsync(Req& r, bool dir) {
  auto in = TRY(r.args.read<fuse_fsync_in>());
  TRY_STATUS(r.args.expect_end());
  Handle* h = TRY(handle_of(in.fh, r.in.nodeid, dir));
  const int rc = (in.fsync_flags & 1) != 0 ? ::fdatasync(h->fd.get()) : ::fsync(h->fd.get());
  if (rc < 0) return last_errno();
  return r.out.send({});
}

FsStatus FileServer::op_flush(Req& r) {
  auto in = TRY(r.args.read<fuse_flush_in>());
  TRY_STATUS(r.args.expect_end());
  (void)TRY(handle_of(in.fh, r.in.nodeid, false));
  return r.out.send({});  // nothing buffered here; no POSIX locks held for the guest
}

FsStatus FileServer::op_fallocate(Req& r) {
  auto in = TRY(r.args.read<fuse_fallocate_in>());
  TRY_STATUS(r.args.expect_end());
  Handle* h = TRY(handle_of(in.fh, r.in.nodeid, false));
  if (in.offset > static_cast<uint64_t>(INT64_MAX) || in.length > static_cast<uint64_t>(INT64_MAX))
    return fs_error(EINVAL);
  const uint32_t punch = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
  if (in.mode != 0 && in.mode != FALLOC_FL_KEEP_SIZE && in.mode != punch)
    return fs_error(EOPNOTSUPP);
  // A punched hole destroys data: not on rw-nodelete (README.md).
  if (in.mode == punch && nodelete()) return fs_error(EPERM);
  if (::fallocate(h->fd.get(), static_cast<int>(in.mode), static_cast<off_t>(in.offset),
                  static_cast<off_t>(in.length)) < 0)
    return last_errno();
  return r.out.send({});
}

FsStatus FileServer::op_lseek(Req& r) {
  auto in = TRY(r.args.read<fuse_lseek_in>());
  TRY_STATUS(r.args.expect_end());
  Handle* h = TRY(handle_of(in.fh, r.in.nodeid, false));
  if (in.whence != SEEK_SET && in.whence != SEEK_CUR && in.whence != SEEK_END &&
      in.whence != SEEK_DATA && in.whence != SEEK_HOLE)
    return fs_error(EINVAL);
  const off_t off =
      ::lseek(h->fd.get(), static_cast<off_t>(in.offset), static_cast<int>(in.whence));
  if (off < 0) return last_errno();
  fuse_lseek_out out{};
  out.offset = static_cast<uint64_t>(off);
  return r.out.send_obj(out);
}

FsStatus FileServer::op_copy_file_range(Req& r) {
  auto in = TRY(r.args.read<fuse_copy_file_range_in>());
  TRY_STATUS(r.args.expect_end());
  if (in.flags != 0) return fs_error(EINVAL);
  Handle* src = TRY(handle_of(in.fh_in, r.in.nodeid, false));
  Handle* dst = TRY(handle_of(in.fh_out, in.nodeid_out, false));
  if (in.off_in > static_cast<uint64_t>(INT64_MAX) || in.off_out > static_cast<uint64_t>(INT64_MAX))
    return fs_error(EINVAL);
  if (r.out.capacity() < sizeof(fuse_write_out)) return fs_error(EINVAL);
  TRY_STATUS(check_overwrite(*dst, in.off_out));
  loff_t off_in = static_cast<loff_t>(in.off_in);
  loff_t off_out = static_cast<loff_t>(in.off_out);
  const size_t len = std::min<uint64_t>(in.len, max_write_);
  const ssize_t n = ::copy_file_range(src->fd.get(), &off_in, dst->fd.get(), &off_out, len, 0);
  if (n < 0) return last_errno();
  fuse_write_out out{};
  out.size = static_cast<uint32_t>(n);
  return r.out.send_obj(out);
}

}  // namespace carapace::fs
