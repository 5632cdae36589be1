// FileServer: READDIR and READDIRPLUS (FUSE: fuse_dirent / fuse_direntplus records, each padded
// to 8 bytes; the offset is the host's getdents64 d_off cookie of the entry).
#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "vmm/devices/fs/file_server.h"
#include "vmm/devices/fs/host_fs.h"

namespace carapace::fs {

namespace {

struct HostDirent {  // linux_dirent64
  uint64_t ino;
  int64_t off;
  uint16_t reclen;
  uint8_t type;
};
constexpr size_t kHostNameOffset = 19;  // offsetof(linux_dirent64, d_name)

}  // namespace

FsStatus FileServer::op_readdir(Req& r, bool plus) {
  auto in = TRY(r.args.read<fuse_read_in>());
  TRY_STATUS(r.args.expect_end());
  Handle* h = TRY(handle_of(in.fh, r.in.nodeid, true));
  if (in.offset > static_cast<uint64_t>(INT64_MAX)) return fs_error(EINVAL);
  if (!r.out.header_fits()) return fs_error(EINVAL);
  const size_t cap = std::min<size_t>({in.size, max_write_, r.out.capacity()});
  if (::lseek(h->fd.get(), static_cast<off_t>(in.offset), SEEK_SET) < 0) return last_errno();

  std::vector<uint8_t> out;
  out.reserve(cap);
  std::vector<uint8_t> buf(32 * 1024);
  bool full = false;
  while (!full) {
    const long got = ::syscall(SYS_getdents64, h->fd.get(), buf.data(), buf.size());
    if (got < 0) {
      if (!out.empty()) break;  // what was gathered still goes back
      return last_errno();
    }
    if (got == 0) break;
    for (size_t pos = 0; pos < static_cast<size_t>(got);) {
      HostDirent d{};
      std::memcpy(&d, buf.data() + pos, sizeof d);
      // getdents64 records come from the host kernel; still never read past the buffer.
      if (d.reclen <= kHostNameOffset || pos + d.reclen > static_cast<size_t>(got)) {
        full = true;
        break;
      }
      const char* name = reinterpret_cast<const char*>(buf.data() + pos + kHostNameOffset);
      const size_t namelen = strnlen(name, d.reclen - kHostNameOffset);
      pos += d.reclen;
      if (d.ino == 0) continue;
      const size_t base = plus ? FUSE_NAME_OFFSET_DIRENTPLUS : FUSE_NAME_OFFSET;
      const size_t rec = FUSE_DIRENT_ALIGN(base + namelen);
      if (out.size() + rec > cap) {
        full = true;
        break;
      }
      const size_t at = out.size();
      out.resize(at + rec, 0);
      fuse_dirent fd{};
      fd.ino = d.ino;
      fd.off = static_cast<uint64_t>(d.off);
      fd.namelen = static_cast<uint32_t>(namelen);
      fd.type = d.type;
      if (plus) {
        fuse_entry_out e{};
        const std::string n(name, namelen);
        // A lookup reference per named entry, as the kernel expects; an entry we refuse (a
        // FIFO, a mount point) or cannot take (table full) goes back with node id 0, which the
        // kernel treats as not looked up.
        if (n != "." && n != ".." && !lookup_entry(h->fd.get(), n, e).ok()) e = {};
        std::memcpy(out.data() + at, &e, sizeof e);
        std::memcpy(out.data() + at + sizeof e, &fd, sizeof fd);
      } else {
        std::memcpy(out.data() + at, &fd, sizeof fd);
      }
      std::memcpy(out.data() + at + base, name, namelen);
    }
  }
  return r.out.send(out);
}

}  // namespace carapace::fs
