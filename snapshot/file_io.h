// Small POSIX file helpers for the snapshot writer and reader: complete reads and writes, size
// checked reads, and the SIGXFSZ policy.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/base/result.h"

namespace carapace {

// pwrite until every byte is written (EINTR and short writes retried). EFBIG gets a hint that
// the file-size limit was hit.
Status pwrite_all(int fd, std::span<const uint8_t> data, uint64_t offset, const std::string& what);
Status fsync_or_error(int fd, const std::string& what);
// The whole of a regular file of at most `max_size` bytes: the size is checked with fstat before
// anything is allocated, and a file that changes size while being read is refused.
Result<std::vector<uint8_t>> read_whole_file(int fd, uint64_t max_size, const std::string& what);

// A write past RLIMIT_FSIZE raises SIGXFSZ, whose default action kills the whole process (the
// kernel directs it at the process, so blocking it in one thread is not enough). The snapshot
// writer calls this so the limit shows up as EFBIG from write()/ftruncate() instead: the default
// disposition is replaced by SIG_IGN, process-wide; a handler the program installed itself
// is left alone.
void ignore_sigxfsz();

}  // namespace carapace
