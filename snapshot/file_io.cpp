#include "snapshot/file_io.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace carapace {

Status pwrite_all(int fd, std::span<const uint8_t> data, uint64_t offset, const std::string& what) {
  while (!data.empty()) {
    ssize_t n = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EFBIG) return sys_error(what + " (file-size limit, RLIMIT_FSIZE?)");
      return sys_error(what);
    }
    if (n == 0) return sys_error(what, EIO);
    data = data.subspan(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return {};
}

Status fsync_or_error(int fd, const std::string& what) {
  // fsync reports delayed-allocation failures (ENOSPC, EIO) that write() did not: never ignored.
  if (::fsync(fd) != 0) return sys_error("fsync " + what);
  return {};
}

Result<std::vector<uint8_t>> read_whole_file(int fd, uint64_t max_size, const std::string& what) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return sys_error("stat " + what);
  if (!S_ISREG(st.st_mode)) return as_invalid_input(make_error(what + " is not a regular file"));
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_size)
    return as_invalid_input(make_error(what + " is " + std::to_string(size) +
                                       " bytes, above the limit " + std::to_string(max_size)));
  std::vector<uint8_t> buf(size);
  uint64_t got = 0;
  while (got < size) {
    ssize_t n = ::pread(fd, buf.data() + got, size - got, static_cast<off_t>(got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return sys_error("read " + what);
    }
    if (n == 0) return as_invalid_input(make_error(what + " shrank while being read"));
    got += static_cast<uint64_t>(n);
  }
  uint8_t extra;
  ssize_t n = ::pread(fd, &extra, 1, static_cast<off_t>(size));
  if (n > 0) return as_invalid_input(make_error(what + " grew while being read"));
  return buf;
}

void ignore_sigxfsz() {
  // Checked on every call (two cheap syscalls per snapshot) rather than once, so a program that
  // reset the disposition in between is still covered.
  struct sigaction old = {};
  if (::sigaction(SIGXFSZ, nullptr, &old) != 0) return;
  if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) return;
  struct sigaction ign = {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  ::sigaction(SIGXFSZ, &ign, nullptr);
}

}  // namespace carapace
