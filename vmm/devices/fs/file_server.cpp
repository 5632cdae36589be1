// FileServer: request framing, dispatch, the mode gate, INIT/DESTROY/FORGET and STATFS
// (file_server.h). The other ops are in fs_entry_ops.cpp, fs_io_ops.cpp and fs_readdir.cpp.
#include "vmm/devices/fs/file_server.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>

#include "vmm/devices/fs/host_fs.h"

namespace carapace::fs {

namespace {
// Read while the process starts, before any thread installs a seccomp filter.
const uid_t kProcessUid = ::geteuid();
const gid_t kProcessGid = ::getegid();
}  // namespace

uid_t FileServer::process_uid() {
  return kProcessUid;
}
gid_t FileServer::process_gid() {
  return kProcessGid;
}

Result<std::unique_ptr<FileServer>> FileServer::create(const FsDeviceConfig& config) {
  if (config.shared_dir.empty()) return as_invalid_input(make_error("virtio-fs: no shared folder"));
  const int root = ::open(config.shared_dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  // The folder is what the user named: not a directory, a symlink, missing or not ours to open
  // is their input (exit status 2, HTTP 400), not a failure of the host.
  if (root < 0)
    return as_invalid_input(
        sys_error("virtio-fs " + config.tag + ": opening the shared folder " + config.shared_dir));
  UniqueFd root_fd(root);
  struct stat st {};
  if (::fstat(root_fd.get(), &st) < 0) return sys_error("virtio-fs: fstat " + config.shared_dir);
  const int proc = ::open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return sys_error("virtio-fs: opening /proc/self/fd");
  std::unique_ptr<FileServer> s(new FileServer(config, UniqueFd(proc)));
  s->config_.max_write = std::clamp<uint32_t>(config.max_write, 4096, 1u << 20);
  s->inodes_.set_root(std::move(root_fd), st);
  return s;
}

void FileServer::reset() {
  handles_.clear();
  inodes_.clear();
  initialized_ = false;
}

uint32_t FileServer::handle(const virtio::DescriptorChain& chain) {
  ++counters_.requests;
  virtio::ChainReader reader = chain.reader();
  fuse_in_header in{};
  bool have_header = false;
  if (reader.available() >= sizeof in) {
    auto h = reader.read_obj<fuse_in_header>();
    if (h.ok()) {
      in = *h;
      have_header = true;
    }
  }
  Req r{in, ArgReader(reader), ReplyWriter(chain.writer(), have_header ? in.unique : 0)};
  FsStatus st = fs_ok();
  // docs/security.md #54: the header must be whole, its len the chain's readable length (the
  // driver puts exactly the request there), no extensions (never negotiated), and the request
  // no longer than its largest op (WRITE with max_write bytes).
  if (!have_header || in.len != chain.readable_bytes() || in.total_extlen != 0 ||
      in.len > sizeof in + kMaxArgs + config_.max_write) {
    st = fs_error(EINVAL);
  } else {
    st = dispatch(r);
  }
  bool bad = false;
  if (!st.ok()) {
    const int code = st.error().code;
    ++counters_.errors;
    if (code == EROFS || code == EPERM || code == EACCES) ++counters_.refused;
    bad = code == EINVAL;
    r.out.error(code);
  }
  // FORGET and BATCH_FORGET have no reply; any other request left unanswered had no room.
  const bool no_reply_op =
      have_header && (in.opcode == FUSE_FORGET || in.opcode == FUSE_BATCH_FORGET);
  if (!r.out.sent() && !no_reply_op) bad = true;
  if (bad) ++counters_.bad_requests;
  return r.out.used();
}

uint32_t FileServer::refuse(const virtio::DescriptorChain& chain, int code) {
  virtio::ChainReader reader = chain.reader();
  if (reader.available() < sizeof(fuse_in_header)) return 0;
  auto in = reader.read_obj<fuse_in_header>();
  if (!in.ok() || in->opcode == FUSE_FORGET || in->opcode == FUSE_BATCH_FORGET) return 0;
  ReplyWriter out(chain.writer(), in->unique);
  out.error(code);
  return out.used();
}

// Write-class requests: EROFS on a read-only share before anything is parsed (README.md,
// Modes). OPEN/CREATE with write flags are checked in open_flags().
FsStatus FileServer::check_mode(const fuse_in_header& in) const {
  switch (in.opcode) {
    case FUSE_SETATTR:
    case FUSE_SYMLINK:
    case FUSE_MKNOD:
    case FUSE_MKDIR:
    case FUSE_UNLINK:
    case FUSE_RMDIR:
    case FUSE_RENAME:
    case FUSE_RENAME2:
    case FUSE_LINK:
    case FUSE_WRITE:
    case FUSE_CREATE:
    case FUSE_FALLOCATE:
    case FUSE_COPY_FILE_RANGE:
    case FUSE_SETXATTR:
    case FUSE_REMOVEXATTR:
      if (!writable()) return fs_error(EROFS);
      break;
    default:
      break;
  }
  // rw-nodelete: removing a name is deleting (README.md, What counts as deleting).
  if (nodelete() && (in.opcode == FUSE_UNLINK || in.opcode == FUSE_RMDIR)) return fs_error(EPERM);
  return fs_ok();
}

FsStatus FileServer::dispatch(Req& r) {
  const uint32_t op = r.in.opcode;
  if (op == FUSE_INIT) return op_init(r);
  // Before INIT (and after DESTROY) only INIT makes sense; FORGETs get no reply either way.
  if (!initialized_) {
    if (op == FUSE_FORGET || op == FUSE_BATCH_FORGET) return fs_ok();
    return fs_error(EIO);
  }
  TRY_STATUS(check_mode(r.in));
  switch (op) {
    case FUSE_LOOKUP:
      return op_lookup(r);
    case FUSE_FORGET:
      return op_forget(r);
    case FUSE_BATCH_FORGET:
      return op_batch_forget(r);
    case FUSE_GETATTR:
      return op_getattr(r);
    case FUSE_SETATTR:
      return op_setattr(r);
    case FUSE_READLINK:
      return op_readlink(r);
    case FUSE_SYMLINK:
      return op_symlink(r);
    case FUSE_MKNOD:
      return op_mknod(r);
    case FUSE_MKDIR:
      return op_mkdir(r);
    case FUSE_UNLINK:
      return op_unlink(r, false);
    case FUSE_RMDIR:
      return op_unlink(r, true);
    case FUSE_RENAME:
      return op_rename(r, false);
    case FUSE_RENAME2:
      return op_rename(r, true);
    case FUSE_LINK:
      return op_link(r);
    case FUSE_OPEN:
      return op_open(r, false);
    case FUSE_OPENDIR:
      return op_open(r, true);
    case FUSE_CREATE:
      return op_create(r);
    case FUSE_READ:
      return op_read(r);
    case FUSE_WRITE:
      return op_write(r);
    case FUSE_READDIR:
      return op_readdir(r, false);
    case FUSE_READDIRPLUS:
      return op_readdir(r, true);
    case FUSE_RELEASE:
      return op_release(r, false);
    case FUSE_RELEASEDIR:
      return op_release(r, true);
    case FUSE_FSYNC:
      return op_fsync(r, false);
    case FUSE_FSYNCDIR:
      return op_fsync(r, true);
    case FUSE_FLUSH:
      return op_flush(r);
    case FUSE_FALLOCATE:
      return op_fallocate(r);
    case FUSE_LSEEK:
      return op_lseek(r);
    case FUSE_COPY_FILE_RANGE:
      return op_copy_file_range(r);
    case FUSE_STATFS:
      return op_statfs(r);
    // Extended attributes are not served: they would carry security labels and capabilities
    // (security.*, trusted.*) between host and guest. The guest sees "not supported".
    case FUSE_GETXATTR:
    case FUSE_LISTXATTR:
    case FUSE_SETXATTR:
    case FUSE_REMOVEXATTR:
      return fs_error(EOPNOTSUPP);
    case FUSE_DESTROY:
      reset();
      return r.out.send({});
    default:
      return fs_error(ENOSYS);
  }
}

// FUSE_INIT: major 7 only; we answer our minor or the guest's, whichever is lower, and cap
// max_write and max_readahead (docs/security.md #54). fuse_init_in grew from 16 bytes (7.31) to
// 64 (7.36); both are accepted.
FsStatus FileServer::op_init(Req& r) {
  auto in = TRY(r.args.read_grown<fuse_init_in>(16));
  if (r.args.remaining() != 0) return fs_error(EINVAL);
  if (in.major != FUSE_KERNEL_VERSION) return fs_error(EPROTO);
  if (initialized_) reset();  // a second INIT starts a new session
  minor_ = std::min(in.minor, kMinor);
  max_write_ = config_.max_write;
  fuse_init_out out{};
  out.major = FUSE_KERNEL_VERSION;
  out.minor = minor_;
  out.max_readahead = std::min(in.max_readahead, max_write_);
  const uint32_t offered = FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_ATOMIC_O_TRUNC |
                           FUSE_DO_READDIRPLUS | FUSE_READDIRPLUS_AUTO | FUSE_PARALLEL_DIROPS |
                           FUSE_MAX_PAGES;
  out.flags = in.flags & offered;
  out.max_background = 64;
  out.congestion_threshold = 48;
  out.max_write = max_write_;
  out.time_gran = 1;
  out.max_pages = static_cast<uint16_t>(max_write_ / 4096);
  TRY_STATUS(r.out.send_obj(out));
  initialized_ = true;
  return fs_ok();
}

// FUSE_FORGET / BATCH_FORGET: no reply (the used length stays 0). An unknown node id is
// ignored: the guest can only forget what it holds.
FsStatus FileServer::op_forget(Req& r) {
  auto in = TRY(r.args.read<fuse_forget_in>());
  TRY_STATUS(r.args.expect_end());
  inodes_.forget(r.in.nodeid, in.nlookup);
  return fs_ok();
}

FsStatus FileServer::op_batch_forget(Req& r) {
  auto in = TRY(r.args.read<fuse_batch_forget_in>());
  // The count must match the bytes exactly; no division of a huge count into a small request.
  if (r.args.remaining() != uint64_t{in.count} * sizeof(fuse_forget_one)) return fs_error(EINVAL);
  for (uint32_t i = 0; i < in.count; ++i) {
    auto one = TRY(r.args.read<fuse_forget_one>());
    inodes_.forget(one.nodeid, one.nlookup);
  }
  return fs_ok();
}

FsStatus FileServer::op_statfs(Req& r) {
  TRY_STATUS(r.args.expect_end());
  Inode* root = inodes_.get(FUSE_ROOT_ID);
  struct statvfs sv {};
  if (::fstatvfs(root->fd.get(), &sv) < 0) return last_errno();
  fuse_statfs_out out{};
  out.st.blocks = sv.f_blocks;
  out.st.bfree = sv.f_bfree;
  out.st.bavail = sv.f_bavail;
  out.st.files = sv.f_files;
  out.st.ffree = sv.f_ffree;
  out.st.bsize = static_cast<uint32_t>(sv.f_bsize);
  out.st.namelen = static_cast<uint32_t>(sv.f_namemax);
  out.st.frsize = static_cast<uint32_t>(sv.f_frsize);
  return r.out.send_obj(out);
}

}  // namespace carapace::fs
