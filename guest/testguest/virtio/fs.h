// A virtio-fs driver (virtio 1.2 §5.11): the tag from the config space, the hiprio queue (0) for
// FORGET and one request queue (1), and synchronous FUSE requests (protocol 7.31, the kernel's
// <linux/fuse.h> layouts). Each request is one chain: one readable descriptor (fuse_in_header,
// the op's arguments, names, WRITE data) and one writable descriptor for fuse_out_header and the
// reply. Every call returns 0 or a negative errno as the device answered it, or kNoReply when
// the device did not answer in time.
#pragma once

#include <linux/fuse.h>

#include <cstdint>

#include "guest/testguest/virtio/init.h"

namespace testguest::virtio {

inline constexpr int kNoReply = -100000;

class FsDriver {
 public:
  static constexpr uint32_t kRequestBytes = 8192;
  static constexpr uint32_t kReplyBytes = 16384;

  // Brings the device up (no feature bits beyond VERSION_1) and reads the tag.
  const char* init(const DeviceInfo& info);
  const char* tag() const { return tag_; }

  // FUSE_INIT for 7.31; fills the negotiated minor and max_write.
  int fuse_init();
  int lookup(uint64_t parent, const char* name, fuse_entry_out& out);
  int getattr(uint64_t node, fuse_attr_out& out);
  int open(uint64_t node, uint32_t flags, uint64_t& fh, bool dir = false);
  // READ into `buf` (at most kReplyBytes - header); `got` is the bytes returned.
  int read(uint64_t node, uint64_t fh, uint64_t offset, void* buf, uint32_t size, uint32_t& got);
  int create(uint64_t parent, const char* name, uint32_t flags, uint32_t mode,
             fuse_entry_out& entry, uint64_t& fh);
  int write(uint64_t node, uint64_t fh, uint64_t offset, const void* data, uint32_t size,
            uint32_t& written);
  int release(uint64_t node, uint64_t fh, bool dir = false);
  int mkdir(uint64_t parent, const char* name, uint32_t mode, fuse_entry_out& entry);
  int unlink(uint64_t parent, const char* name);
  // READDIR: raw fuse_dirent records into `buf`.
  int readdir(uint64_t node, uint64_t fh, uint64_t offset, void* buf, uint32_t size, uint32_t& got);
  int destroy();
  // FORGET on the hiprio queue (no reply: true when the device used the chain).
  bool forget(uint64_t node, uint64_t nlookup);

  uint32_t minor = 0;
  uint32_t max_write = 0;

 private:
  // header + arg + name (NUL added when given) + data, then the reply into reply_.
  int call(uint32_t opcode, uint64_t nodeid, const void* arg, uint32_t arg_len,
           const char* name = nullptr, const void* data = nullptr, uint32_t data_len = 0,
           uint32_t* reply_len = nullptr);

  Device dev_;
  Virtqueue queues_[2];  // hiprio, request
  uint8_t* request_ = nullptr;
  uint8_t* reply_ = nullptr;
  uint64_t unique_ = 0;
  char tag_[37] = {};
};

}  // namespace testguest::virtio
