// FileServer: the host side of virtio-fs (virtio 1.2 §5.11) -- one FUSE request (protocol 7.31)
// in a descriptor chain in, its reply out, over one host folder, in the mode the share's
// configuration says (README.md in this folder).
//
// Not thread-safe: the device calls it from its queue thread, one request at a time. Every
// guest mistake is an errno reply (or, for a chain without room for a reply header, a used
// length of 0); nothing a guest sends ends the server or grows it past its bounds.
#pragma once

#include <linux/fuse.h>
#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <string>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "vmm/devices/fs/fs_config.h"
#include "vmm/devices/fs/fuse_wire.h"
#include "vmm/devices/fs/inode_table.h"
#include "vmm/virtio/descriptor_chain.h"

namespace carapace::fs {

struct FsCounters {
  uint64_t requests = 0;
  uint64_t errors = 0;        // answered with an errno
  uint64_t bad_requests = 0;  // malformed: EINVAL for the wire format, or no room for a reply
  uint64_t refused = 0;       // refused by the mode or the share's rules (EROFS, EPERM, EACCES)
};

class FileServer {
 public:
  // Our protocol minor: what INIT answers at most.
  static constexpr uint32_t kMinor = 31;
  // A request's readable part: headers and arguments up to a page and a bit, plus WRITE data.
  static constexpr size_t kMaxArgs = 8192;

  // Opens the share's root (a directory, not a symlink) and /proc/self/fd. Host errors.
  static Result<std::unique_ptr<FileServer>> create(const FsDeviceConfig& config);

  // Serves one request chain; returns the used length (the reply's bytes).
  uint32_t handle(const virtio::DescriptorChain& chain);
  // Answers one request chain with -`code` and serves nothing (a device with no share bound):
  // the used length, 0 for FORGET and BATCH_FORGET (no reply) or without room for a header.
  static uint32_t refuse(const virtio::DescriptorChain& chain, int code);
  // Device reset: back to before INIT, every inode but the root forgotten, every handle closed.
  void reset();

  const FsCounters& counters() const { return counters_; }
  size_t inode_count() const { return inodes_.size(); }
  size_t handle_count() const { return handles_.size(); }
  bool initialized() const { return initialized_; }
  // A FUSE session is live: INIT answered since the last reset or DESTROY, or node ids or
  // handles held. Its node ids and handles name host fds, which no snapshot can carry.
  bool has_session() const { return initialized_ || inodes_.size() > 1 || handles_.size() > 0; }

 private:
  // One request being served.
  struct Req {
    fuse_in_header in;
    ArgReader args;
    ReplyWriter out;
  };

  FileServer(const FsDeviceConfig& config, UniqueFd proc_fd)
      : config_(config),
        proc_fd_(std::move(proc_fd)),
        host_uid_(process_uid()),
        host_gid_(process_gid()),
        inodes_(config.max_inodes),
        handles_(config.max_handles) {}
  static uid_t process_uid();
  static gid_t process_gid();

  FsStatus dispatch(Req& r);
  FsStatus check_mode(const fuse_in_header& in) const;

  // file_server.cpp
  FsStatus op_init(Req& r);
  FsStatus op_forget(Req& r);
  FsStatus op_batch_forget(Req& r);
  FsStatus op_statfs(Req& r);
  // fs_entry_ops.cpp
  FsStatus op_lookup(Req& r);
  FsStatus op_getattr(Req& r);
  FsStatus op_setattr(Req& r);
  FsStatus op_readlink(Req& r);
  FsStatus op_symlink(Req& r);
  FsStatus op_mknod(Req& r);
  FsStatus op_mkdir(Req& r);
  FsStatus op_unlink(Req& r, bool dir);
  FsStatus op_rename(Req& r, bool v2);
  FsStatus op_link(Req& r);
  // fs_io_ops.cpp
  FsStatus op_open(Req& r, bool dir);
  FsStatus op_create(Req& r);
  FsStatus op_read(Req& r);
  FsStatus op_write(Req& r);
  FsStatus op_release(Req& r, bool dir);
  FsStatus op_fsync(Req& r, bool dir);
  FsStatus op_flush(Req& r);
  FsStatus op_fallocate(Req& r);
  FsStatus op_lseek(Req& r);
  FsStatus op_copy_file_range(Req& r);
  // fs_readdir.cpp
  FsStatus op_readdir(Req& r, bool plus);

  // Helpers (fs_entry_ops.cpp).
  FsResult<Inode*> inode(uint64_t nodeid);
  FsResult<Inode*> dir_inode(uint64_t nodeid);
  FsResult<Handle*> handle_of(uint64_t fh, uint64_t nodeid, bool dir);
  // Looks `name` up in `dir` and takes one lookup reference; fills `out`.
  FsStatus lookup_entry(int dirfd, const std::string& name, fuse_entry_out& out);
  void fill_entry(uint64_t nodeid, const struct stat& st, fuse_entry_out& out) const;
  void fill_attr(const struct stat& st, fuse_attr& out) const;
  // The open flags a guest may ask for, with the mode's rules applied (EROFS, EPERM).
  FsResult<int> open_flags(uint32_t guest_flags, bool dir) const;
  // rw-nodelete: an O_TRUNC of a non-empty file is a delete (EPERM). Truncates otherwise.
  FsStatus apply_trunc(int fd, bool want_trunc) const;
  // rw-nodelete: a write into existing bytes of a file this handle did not create is EPERM.
  FsStatus check_overwrite(const Handle& h, uint64_t offset) const;
  // A handle for `fd` (an open file of inode `nodeid`), replied as fuse_open_out.
  FsStatus reply_open(Req& r, UniqueFd fd, uint64_t nodeid, bool dir, int flags, bool created);
  bool writable() const { return config_.mode != FsMode::kReadOnly; }
  bool nodelete() const { return config_.mode == FsMode::kNoDelete; }

  FsDeviceConfig config_;
  UniqueFd proc_fd_;  // /proc/self/fd (host_fs.h: reopen)
  // The VMM's own ids: what the share's owner is seen as through the jail's id-mapped mount.
  // The guest sees them as its root (uid/gid 0, who runs the agent's commands), so the files it
  // owns on the host are its own inside (git, ssh and friends check ownership).
  // Read once at start-up (file_server.cpp), before any thread's seccomp filter is in place.
  uid_t host_uid_;
  gid_t host_gid_;
  uint32_t guest_uid(uid_t host) const { return host == host_uid_ ? 0 : host; }
  uint32_t guest_gid(gid_t host) const { return host == host_gid_ ? 0 : host; }
  InodeTable inodes_;
  HandleTable handles_;
  FsCounters counters_;
  bool initialized_ = false;
  uint32_t minor_ = kMinor;  // negotiated at INIT
  uint32_t max_write_ = 0;
};

}  // namespace carapace::fs
