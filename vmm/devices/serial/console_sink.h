// ConsoleSink: where the guest's console bytes go. The vCPU thread only appends to a bounded
// buffer; a writer thread drains it to the output fd, so a slow or blocked reader of stdout can
// never stall the guest, and a flooding guest cannot grow host memory (docs/security.md #29):
// bytes beyond the bound are dropped and counted. A file console can also be capped in total
// (`--console file:PATH,max=BYTES`): a guest that floods it for hours must not fill the host's
// disk either; what passes the cap is dropped and counted the same way.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace carapace {

class ConsoleSink {
 public:
  static constexpr size_t kDefaultCapacity = 1 << 20;
  // How long close() lets a stalled reader catch up before the rest is dropped.
  static constexpr std::chrono::milliseconds kCloseGrace{1000};

  // Runs first on the writer thread (the machine installs the thread's seccomp filter there); a
  // failure keeps the writer from starting, and the drop counter shows it.
  using ThreadSetup = std::function<Status()>;

  // Writes to `fd` (not owned when `owned` is false, e.g. stdout). fd < 0 discards everything.
  // `max_total` > 0: at most that many bytes are ever taken; the rest is dropped.
  ConsoleSink(int fd, bool owned, size_t capacity = kDefaultCapacity, uint64_t max_total = 0,
              ThreadSetup setup = {});
  ~ConsoleSink();
  ConsoleSink(const ConsoleSink&) = delete;
  ConsoleSink& operator=(const ConsoleSink&) = delete;

  static Result<std::unique_ptr<ConsoleSink>> open_file(const std::string& path,
                                                        uint64_t max_total = 0,
                                                        ThreadSetup setup = {});

  void put(uint8_t byte);
  // Writes out everything buffered and stops the writer thread; later puts are dropped.
  void close();

  uint64_t dropped() const;
  uint64_t written() const;

 private:
  void writer_loop();
  // Writes `chunk` unless the reader stalls past the close grace period; returns bytes written.
  size_t write_out(const std::string& chunk);

  int fd_;
  UniqueFd owned_fd_;
  size_t capacity_;
  uint64_t max_total_;
  uint64_t accepted_ = 0;  // bytes taken into pending_ so far (against max_total_)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_;
  bool closing_ = false;
  bool flush_now_ = false;
  std::chrono::steady_clock::time_point give_up_at_;
  uint64_t dropped_ = 0;
  uint64_t written_ = 0;
  std::thread writer_;
};

}  // namespace carapace
