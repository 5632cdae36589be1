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

// A child started in the background, for tests that interact with it while it runs (sockets the
// VMM serves, lines the guest prints before it waits for the host). stdout and stderr are
// collected whenever the test waits on it. The destructor kills and reaps a child still running.
class RunningProcess {
 public:
  explicit RunningProcess(const std::vector<std::string>& argv);
  ~RunningProcess();
  RunningProcess(const RunningProcess&) = delete;
  RunningProcess& operator=(const RunningProcess&) = delete;

  bool started() const { return pid_ > 0; }
  int pid() const { return pid_; }
  // Collects output until stdout contains `text` (true), the child closes its output, or `limit`
  // passes (false).
  bool wait_for_output(const std::string& text, std::chrono::milliseconds limit);
  // Output so far.
  const std::string& out() const { return res_.out; }
  const std::string& err() const { return res_.err; }
  // Collects the rest of the output and waits for the exit; kills the child after `limit`.
  ProcessResult finish(std::chrono::milliseconds limit = std::chrono::seconds(60));

 private:
  // Reads what is available within `timeout_ms`; false once both pipes are closed.
  bool pump(int timeout_ms);

  int pid_ = -1;
  int fds_[2] = {-1, -1};  // stdout, stderr read ends
  std::chrono::steady_clock::time_point start_;
  ProcessResult res_;
  bool reaped_ = false;
};

}  // namespace carapace::testing
