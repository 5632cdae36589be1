// Test helper: a pipe whose read end is drained on a thread, collecting everything written.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "common/base/unique_fd.h"

namespace carapace::testing {

class PipeReader {
 public:
  PipeReader() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) == 0) {
      read_end_.reset(fds[0]);
      write_fd_ = fds[1];
    }
  }
  ~PipeReader() {
    if (thread_.joinable()) thread_.join();
  }
  bool ok() const { return read_end_.valid(); }
  // The write end; the caller (a ConsoleSink) takes ownership.
  int write_fd() const { return write_fd_; }
  int read_fd() const { return read_end_.get(); }

  // Reads on a thread until end of file (every write end closed).
  void start() {
    thread_ = std::thread([this] {
      char buf[4096];
      for (;;) {
        ssize_t n = ::read(read_end_.get(), buf, sizeof buf);
        if (n <= 0) break;
        data_.append(buf, static_cast<size_t>(n));
      }
    });
  }
  // Waits for end of file and returns everything read.
  const std::string& finish() {
    if (thread_.joinable()) thread_.join();
    return data_;
  }

 private:
  UniqueFd read_end_;
  int write_fd_ = -1;
  std::thread thread_;
  std::string data_;
};

}  // namespace carapace::testing
