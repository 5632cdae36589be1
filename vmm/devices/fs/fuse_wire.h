// The FUSE wire format over one virtio-fs request (virtio 1.2 §5.11.6, FUSE protocol 7.31): the
// driver-readable part is fuse_in_header + the op's arguments (+ WRITE data), the device-writable
// part receives fuse_out_header + the reply. The struct layouts are the kernel's
// (<linux/fuse.h>); what differs between protocol minors (fuse_init_in) is read by size.
//
// ArgReader bounds every argument by what the chain holds; a short, oversized or mis-sized
// argument is EINVAL, never a read past the request (docs/security.md #54). ReplyWriter
// answers errors as a bare header with -errno (FUSE: out.error is a negative errno).
#pragma once

#include <linux/fuse.h>

#include <cerrno>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include "common/base/result.h"
#include "vmm/virtio/chain_io.h"

namespace carapace::fs {

// A positive errno for the guest. Results of the file server's ops carry it.
struct Errno {
  int code = EIO;
};
template <typename T>
using FsResult = Result<T, Errno>;
using FsStatus = Result<void, Errno>;
inline Errno fs_error(int code) {
  return Errno{code};
}
// errno of the last failed system call (EIO if it is somehow 0).
inline Errno last_errno() {
  return Errno{errno != 0 ? errno : EIO};
}
inline FsStatus fs_ok() {
  return FsStatus();
}

// Validates one path component from the guest (FUSE names are single components): 1..255 bytes,
// no '/', no NUL, not "." or ".." (docs/security.md #55).
FsStatus check_name(std::string_view name);

// The arguments of one request: the readable bytes after fuse_in_header.
class ArgReader {
 public:
  explicit ArgReader(virtio::ChainReader r) : r_(r) {}

  size_t remaining() const { return r_.available(); }
  // A fixed struct; EINVAL when fewer bytes remain.
  template <typename T>
  FsResult<T> read() {
    static_assert(std::is_trivially_copyable_v<T>);
    if (r_.available() < sizeof(T)) return fs_error(EINVAL);
    auto v = r_.read_obj<T>();
    if (!v.ok()) return fs_error(EINVAL);
    return *v;
  }
  // A struct that grew between protocol minors: at least `min_size` bytes, the rest of it (and
  // of the request, up to sizeof(T)) taken as given, zero when absent.
  template <typename T>
  FsResult<T> read_grown(size_t min_size) {
    static_assert(std::is_trivially_copyable_v<T>);
    T out{};
    const size_t n = r_.available() < sizeof(T) ? r_.available() : sizeof(T);
    if (n < min_size) return fs_error(EINVAL);
    if (!r_.read({reinterpret_cast<uint8_t*>(&out), n}).ok()) return fs_error(EINVAL);
    return out;
  }
  // A NUL-terminated string of 1..max bytes (the NUL not counted), consumed with its NUL.
  FsResult<std::string> cstring(size_t max);
  // A validated path component (check_name), NUL-terminated.
  FsResult<std::string> name();
  // Nothing may follow the arguments: a request longer than its op is EINVAL.
  FsStatus expect_end() const { return r_.available() == 0 ? fs_ok() : fs_error(EINVAL); }
  virtio::ChainReader& chain() { return r_; }

 private:
  virtio::ChainReader r_;
};

// The reply of one request: fuse_out_header, then the payload.
class ReplyWriter {
 public:
  ReplyWriter(virtio::ChainWriter w, uint64_t unique) : w_(w), unique_(unique) {}

  // Bytes the payload may take (0 when not even a header fits).
  size_t capacity() const {
    return w_.available() > sizeof(fuse_out_header) ? w_.available() - sizeof(fuse_out_header) : 0;
  }
  bool header_fits() const { return w_.available() >= sizeof(fuse_out_header); }
  // Header + payload. EINVAL (nothing written) when the guest's buffer is too small.
  FsStatus send(std::span<const uint8_t> payload);
  template <typename T>
  FsStatus send_obj(const T& obj) {
    static_assert(std::is_trivially_copyable_v<T>);
    return send({reinterpret_cast<const uint8_t*>(&obj), sizeof(T)});
  }
  // For payloads written in place (READ, READDIR): the writer past the header, then finish()
  // with the bytes written there. Needs header_fits().
  FsResult<virtio::ChainWriter> body();
  FsStatus finish(size_t len);
  // Header with -code and no payload; nothing when not even that fits.
  void error(int code);
  // The used length: everything written so far.
  uint32_t used() const { return static_cast<uint32_t>(w_.bytes_written() + body_written_); }
  bool sent() const { return sent_; }

 private:
  virtio::ChainWriter w_;
  uint64_t unique_;
  size_t body_written_ = 0;
  bool sent_ = false;
};

}  // namespace carapace::fs
