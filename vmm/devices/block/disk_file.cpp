#include "vmm/devices/block/disk_file.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <climits>

namespace carapace::block {

namespace {

Error bad_file(const char* what, const std::string& path, const char* why, int err = 0) {
  Error e = err ? sys_error(std::string(what) + " " + path + ": " + why, err)
                : make_error(std::string(what) + " " + path + ": " + why);
  return as_invalid_input(std::move(e));
}

// One preadv/pwritev pass over at most IOV_MAX spans.
template <typename Op>
Status transfer_all(int fd, uint64_t offset, std::span<const iovec> iov, Op op, const char* what) {
  const uint64_t total = iov_bytes(iov);
  if (total == 0) return {};
  if (offset > static_cast<uint64_t>(INT64_MAX) - total) return make_error("offset overflows");
  // Fast path: one call moves everything (the common case for regular files).
  const int first_n = static_cast<int>(std::min<size_t>(iov.size(), IOV_MAX));
  ssize_t n;
  do {
    n = op(fd, iov.data(), first_n, static_cast<off_t>(offset));
  } while (n < 0 && errno == EINTR);
  if (n < 0) return sys_error(what);
  if (static_cast<uint64_t>(n) == total) return {};
  // Slow path: a copy of the list we can advance.
  std::vector<iovec> rest(iov.begin(), iov.end());
  size_t start = 0;
  uint64_t done = static_cast<uint64_t>(n);
  for (;;) {
    if (n == 0) return make_error(std::string(what) + ": unexpected end of file");
    iov_advance(rest, &start, static_cast<uint64_t>(n));
    if (done == total) return {};
    const int count = static_cast<int>(std::min<size_t>(rest.size() - start, IOV_MAX));
    do {
      n = op(fd, rest.data() + start, count, static_cast<off_t>(offset + done));
    } while (n < 0 && errno == EINTR);
    if (n < 0) return sys_error(what);
    done += static_cast<uint64_t>(n);
  }
}

}  // namespace

Result<DiskFile> open_disk_file(const char* what, const std::string& path, FileMode mode) {
  if (path.empty()) return bad_file(what, path, "empty path");
  int flags = O_CLOEXEC | O_NOCTTY | O_NONBLOCK;  // O_NONBLOCK: opening a FIFO must not hang
  flags |= mode == FileMode::kReadOnly ? O_RDONLY : O_RDWR;
  bool created = false;
  int fd = -1;
  if (mode == FileMode::kReadWriteCreate) {
    fd = ::open(path.c_str(), flags | O_CREAT | O_EXCL, 0600);
    if (fd >= 0)
      created = true;
    else if (errno == EEXIST)
      fd = ::open(path.c_str(), flags);
  } else {
    fd = ::open(path.c_str(), flags);
  }
  if (fd < 0) return bad_file(what, path, "cannot open", errno);
  DiskFile f;
  f.fd = UniqueFd(fd);
  f.created = created;
  struct stat st;
  if (::fstat(fd, &st) < 0) return bad_file(what, path, "fstat", errno);
  if (S_ISREG(st.st_mode)) {
    f.size = static_cast<uint64_t>(st.st_size);
  } else if (S_ISBLK(st.st_mode)) {
    uint64_t bytes = 0;
    if (::ioctl(fd, BLKGETSIZE64, &bytes) < 0) return bad_file(what, path, "BLKGETSIZE64", errno);
    f.size = bytes;
  } else {
    return bad_file(what, path, "not a regular file or block device");
  }
  // Blocking I/O from here on (regular files ignore O_NONBLOCK; block devices need it off).
  if (::fcntl(fd, F_SETFL, 0) < 0) return bad_file(what, path, "fcntl", errno);
  const int lock = mode == FileMode::kReadOnly ? LOCK_SH : LOCK_EX;
  if (::flock(fd, lock | LOCK_NB) < 0) {
    if (errno == EWOULDBLOCK)
      return bad_file(what, path,
                      mode == FileMode::kReadOnly ? "is open for writing elsewhere"
                                                  : "is in use elsewhere (locked)");
    return bad_file(what, path, "flock", errno);
  }
  return f;
}

uint64_t iov_bytes(std::span<const iovec> iov) {
  uint64_t n = 0;
  for (const iovec& v : iov)
    n += v.iov_len;
  return n;
}

void iov_slice(std::span<const iovec> iov, uint64_t from, uint64_t len, std::vector<iovec>& out) {
  for (const iovec& v : iov) {
    if (len == 0) return;
    if (from >= v.iov_len) {
      from -= v.iov_len;
      continue;
    }
    const uint64_t take = std::min<uint64_t>(v.iov_len - from, len);
    out.push_back({static_cast<uint8_t*>(v.iov_base) + from, static_cast<size_t>(take)});
    len -= take;
    from = 0;
  }
}

void iov_advance(std::vector<iovec>& iov, size_t* start, uint64_t n) {
  while (n > 0 && *start < iov.size()) {
    iovec& v = iov[*start];
    if (n < v.iov_len) {
      v.iov_base = static_cast<uint8_t*>(v.iov_base) + n;
      v.iov_len -= n;
      return;
    }
    n -= v.iov_len;
    ++*start;
  }
}

Status preadv_all(int fd, uint64_t offset, std::span<const iovec> iov) {
  return transfer_all(fd, offset, iov, ::preadv, "preadv");
}

Status pwritev_all(int fd, uint64_t offset, std::span<const iovec> iov) {
  return transfer_all(fd, offset, iov, ::pwritev, "pwritev");
}

Status zero_file_range(int fd, uint64_t offset, uint64_t len) {
  // A hole reads zeroes and frees the space (write_zeroes_may_unmap = 1).
  if (::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                  static_cast<off_t>(len)) == 0)
    return {};
  if (errno != EOPNOTSUPP) return sys_error("fallocate(PUNCH_HOLE)");
  if (::fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                  static_cast<off_t>(len)) == 0)
    return {};
  if (errno != EOPNOTSUPP) return sys_error("fallocate(ZERO_RANGE)");
  // Last resort: write zero bytes (bounded by max_write_zeroes_sectors per request).
  static const std::array<uint8_t, 64 * 1024> zeroes{};
  while (len > 0) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(len, zeroes.size()));
    iovec v{const_cast<uint8_t*>(zeroes.data()), n};
    TRY_STATUS(pwritev_all(fd, offset, {&v, 1}));
    offset += n;
    len -= n;
  }
  return {};
}

}  // namespace carapace::block
