#include "guest/testguest/virtio/fs.h"

#include "guest/testguest/virtio/dma.h"

namespace testguest::virtio {
namespace {

constexpr uint64_t kTimeout = kDeviceTimeout;

uint32_t str_len(const char* s) {
  uint32_t n = 0;
  while (s[n])
    ++n;
  return n;
}

}  // namespace

const char* FsDriver::init(const DeviceInfo& info) {
  dev_ = Device(info);
  const InitResult r = init_device(dev_, 0, queues_, 2, 64);
  if (r.error) return r.error;
  if (!request_) {
    request_ = static_cast<uint8_t*>(dma_alloc(kRequestBytes, 64));
    reply_ = static_cast<uint8_t*>(dma_alloc(kReplyBytes, 64));
    if (!request_ || !reply_) return "out of DMA memory";
  }
  // virtio 1.2 §5.11.4: tag[36], NUL-padded (not terminated when all 36 bytes are used).
  for (uint32_t i = 0; i < 36; ++i)
    tag_[i] = static_cast<char>(dev_.config8(i));
  tag_[36] = 0;
  if (dev_.config32(36) < 1) return "virtio-fs: no request queue in the config space";
  return nullptr;
}

int FsDriver::call(uint32_t opcode, uint64_t nodeid, const void* arg, uint32_t arg_len,
                   const char* name, const void* data, uint32_t data_len, uint32_t* reply_len) {
  const uint32_t name_len = name ? str_len(name) + 1 : 0;
  const uint32_t len = sizeof(fuse_in_header) + arg_len + name_len + data_len;
  if (len > kRequestBytes) return -7;  // E2BIG: the driver's own limit
  fuse_in_header h{};
  h.len = len;
  h.opcode = opcode;
  h.unique = ++unique_;
  h.nodeid = nodeid;
  uint32_t at = 0;
  copy_bytes(request_, &h, sizeof h);
  at += sizeof h;
  if (arg_len) copy_bytes(request_ + at, arg, arg_len);
  at += arg_len;
  if (name_len) copy_bytes(request_ + at, name, name_len);
  at += name_len;
  if (data_len) copy_bytes(request_ + at, data, data_len);
  // FORGET has no reply: a chain with only the request (virtio 1.2 §5.11.6.1).
  const bool no_reply = opcode == FUSE_FORGET;
  Virtqueue& q = queues_[no_reply ? 0 : 1];
  const Buf bufs[2] = {buf_out(request_, len), buf_in(reply_, kReplyBytes)};
  const int64_t used = q.submit_and_wait(bufs, no_reply ? 1 : 2, kTimeout);
  if (used < 0) return kNoReply;
  if (no_reply) return 0;
  if (used < static_cast<int64_t>(sizeof(fuse_out_header))) return kNoReply;
  fuse_out_header out;
  copy_bytes(&out, reply_, sizeof out);
  if (out.unique != h.unique || out.len != used) return kNoReply;
  if (reply_len) *reply_len = out.len - sizeof out;
  return out.error;
}

int FsDriver::fuse_init() {
  fuse_init_in in{};
  in.major = FUSE_KERNEL_VERSION;
  in.minor = 31;
  in.max_readahead = 65536;
  // fuse_init_in was 16 bytes in 7.31 (it grew in 7.36): send that size.
  const int e = call(FUSE_INIT, 0, &in, 16);
  if (e != 0) return e;
  fuse_init_out out;
  copy_bytes(&out, reply_ + sizeof(fuse_out_header), sizeof out);
  minor = out.minor;
  max_write = out.max_write;
  return 0;
}

int FsDriver::lookup(uint64_t parent, const char* name, fuse_entry_out& out) {
  const int e = call(FUSE_LOOKUP, parent, nullptr, 0, name);
  if (e == 0) copy_bytes(&out, reply_ + sizeof(fuse_out_header), sizeof out);
  return e;
}

int FsDriver::getattr(uint64_t node, fuse_attr_out& out) {
  fuse_getattr_in in{};
  const int e = call(FUSE_GETATTR, node, &in, sizeof in);
  if (e == 0) copy_bytes(&out, reply_ + sizeof(fuse_out_header), sizeof out);
  return e;
}

int FsDriver::open(uint64_t node, uint32_t flags, uint64_t& fh, bool dir) {
  fuse_open_in in{};
  in.flags = flags;
  const int e = call(dir ? FUSE_OPENDIR : FUSE_OPEN, node, &in, sizeof in);
  if (e != 0) return e;
  fuse_open_out out;
  copy_bytes(&out, reply_ + sizeof(fuse_out_header), sizeof out);
  fh = out.fh;
  return 0;
}

int FsDriver::read(uint64_t node, uint64_t fh, uint64_t offset, void* buf, uint32_t size,
                   uint32_t& got) {
  fuse_read_in in{};
  in.fh = fh;
  in.offset = offset;
  in.size = size;
  uint32_t n = 0;
  const int e = call(FUSE_READ, node, &in, sizeof in, nullptr, nullptr, 0, &n);
  if (e != 0) return e;
  got = n < size ? n : size;
  copy_bytes(buf, reply_ + sizeof(fuse_out_header), got);
  return 0;
}

int FsDriver::create(uint64_t parent, const char* name, uint32_t flags, uint32_t mode,
                     fuse_entry_out& entry, uint64_t& fh) {
  fuse_create_in in{};
  in.flags = flags;
  in.mode = mode;
  const int e = call(FUSE_CREATE, parent, &in, sizeof in, name);
  if (e != 0) return e;
  copy_bytes(&entry, reply_ + sizeof(fuse_out_header), sizeof entry);
  fuse_open_out open;
  copy_bytes(&open, reply_ + sizeof(fuse_out_header) + sizeof entry, sizeof open);
  fh = open.fh;
  return 0;
}

int FsDriver::write(uint64_t node, uint64_t fh, uint64_t offset, const void* data, uint32_t size,
                    uint32_t& written) {
  fuse_write_in in{};
  in.fh = fh;
  in.offset = offset;
  in.size = size;
  const int e = call(FUSE_WRITE, node, &in, sizeof in, nullptr, data, size);
  if (e != 0) return e;
  fuse_write_out out;
  copy_bytes(&out, reply_ + sizeof(fuse_out_header), sizeof out);
  written = out.size;
  return 0;
}

int FsDriver::release(uint64_t node, uint64_t fh, bool dir) {
  fuse_release_in in{};
  in.fh = fh;
  return call(dir ? FUSE_RELEASEDIR : FUSE_RELEASE, node, &in, sizeof in);
}

int FsDriver::mkdir(uint64_t parent, const char* name, uint32_t mode, fuse_entry_out& entry) {
  fuse_mkdir_in in{};
  in.mode = mode;
  const int e = call(FUSE_MKDIR, parent, &in, sizeof in, name);
  if (e == 0) copy_bytes(&entry, reply_ + sizeof(fuse_out_header), sizeof entry);
  return e;
}

int FsDriver::unlink(uint64_t parent, const char* name) {
  return call(FUSE_UNLINK, parent, nullptr, 0, name);
}

int FsDriver::readdir(uint64_t node, uint64_t fh, uint64_t offset, void* buf, uint32_t size,
                      uint32_t& got) {
  fuse_read_in in{};
  in.fh = fh;
  in.offset = offset;
  in.size = size;
  uint32_t n = 0;
  const int e = call(FUSE_READDIR, node, &in, sizeof in, nullptr, nullptr, 0, &n);
  if (e != 0) return e;
  got = n < size ? n : size;
  copy_bytes(buf, reply_ + sizeof(fuse_out_header), got);
  return 0;
}

int FsDriver::destroy() {
  return call(FUSE_DESTROY, 0, nullptr, 0);
}

bool FsDriver::forget(uint64_t node, uint64_t nlookup) {
  fuse_forget_in in{};
  in.nlookup = nlookup;
  return call(FUSE_FORGET, node, &in, sizeof in) == 0;
}

}  // namespace testguest::virtio
