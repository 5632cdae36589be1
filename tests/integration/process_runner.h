// Runs a child process with captured stdout/stderr and a wall-clock limit, for tests and benches
// that drive the real `carapace` binary.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace carapace::testing {

struct ProcessResult {
  int exit_code = -1;   // valid when exited
  int term_signal = 0;  // non-zero when killed by a signal
  bool timed_out = false;
  std::string out;
  std::string err;
  std::chrono::nanoseconds wall{0};
};

ProcessResult run_process(const std::vector<std::string>& argv,
                          std::chrono::milliseconds limit = std::chrono::seconds(60));

}  // namespace carapace::testing
