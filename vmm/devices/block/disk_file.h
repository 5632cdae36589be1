// Host-side helpers for disk images: opening and locking image files, and moving bytes between a
// file and an iovec list (guest memory spans) with the short transfers and EINTR handled.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace carapace::block {

struct DiskFile {
  UniqueFd fd;
  uint64_t size = 0;  // bytes (BLKGETSIZE64 for a block device)
  bool created = false;
};

enum class FileMode {
  kReadOnly,         // O_RDONLY, shared lock
  kReadWrite,        // O_RDWR, exclusive lock
  kReadWriteCreate,  // O_RDWR | O_CREAT (0600), exclusive lock
};

// Opens `path` (`what` names it in errors): a regular file or a block device, nothing else (a
// FIFO or a character device would hang or misbehave). The lock (flock, non-blocking) keeps a
// writer away from an image other VMs read, and two writers apart. Errors are kInvalidInput.
Result<DiskFile> open_disk_file(const char* what, const std::string& path, FileMode mode);

uint64_t iov_bytes(std::span<const iovec> iov);
// Appends to `out` the spans of `iov` covering bytes [from, from + len) of it.
void iov_slice(std::span<const iovec> iov, uint64_t from, uint64_t len, std::vector<iovec>& out);
// Drops the first `n` bytes of iov[*start..]: advances *start and trims the first span left.
void iov_advance(std::vector<iovec>& iov, size_t* start, uint64_t n);

// Reads/writes exactly iov_bytes(iov) at `offset`, looping over short transfers and EINTR.
// Reading past the end of the file is an error (the file shrank under us).
Status preadv_all(int fd, uint64_t offset, std::span<const iovec> iov);
Status pwritev_all(int fd, uint64_t offset, std::span<const iovec> iov);

// Makes [offset, offset + len) of a regular file read as zeroes: punches a hole, else
// FALLOC_FL_ZERO_RANGE, else writes zero bytes.
Status zero_file_range(int fd, uint64_t offset, uint64_t len);

}  // namespace carapace::block
