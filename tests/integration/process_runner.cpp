#include "tests/integration/process_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

namespace carapace::testing {

ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds limit) {
  return RunningProcess(argv).finish(limit);
}

RunningProcess::RunningProcess(const std::vector<std::string>& argv) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) < 0) return;
  if (pipe2(err, O_CLOEXEC) < 0) {
    close(out[0]);
    close(out[1]);
    return;
  }
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  start_ = std::chrono::steady_clock::now();
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  fds_[0] = out[0];
  fds_[1] = err[0];
  if (pid_ < 0) {
    close(fds_[0]);
    close(fds_[1]);
    fds_[0] = fds_[1] = -1;
  }
}

RunningProcess::~RunningProcess() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  for (int fd : fds_)
    if (fd >= 0) close(fd);
}

bool RunningProcess::pump(int timeout_ms) {
  pollfd fds[2] = {{fds_[0], POLLIN, 0}, {fds_[1], POLLIN, 0}};
  if (fds_[0] < 0 && fds_[1] < 0) return false;
  int n = poll(fds, 2, timeout_ms);
  if (n < 0 && errno != EINTR) return false;
  char buf[65536];
  for (int i = 0; i < 2 && n > 0; ++i) {
    if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t r = read(fds[i].fd, buf, sizeof buf);
    if (r <= 0) {
      close(fds_[i]);
      fds_[i] = -1;
    } else {
      (i == 0 ? res_.out : res_.err).append(buf, static_cast<size_t>(r));
    }
  }
  return fds_[0] >= 0 || fds_[1] >= 0;
}

bool RunningProcess::wait_for_output(const std::string& text, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (res_.out.find(text) == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    if (!pump(static_cast<int>(left.count()))) return res_.out.find(text) != std::string::npos;
  }
  return true;
}

ProcessResult RunningProcess::finish(std::chrono::milliseconds limit) {
  if (pid_ <= 0) {
    res_.err += "fork or pipe failed";
    return res_;
  }
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      res_.timed_out = true;
      kill(pid_, SIGKILL);
      break;
    }
    if (!pump(static_cast<int>(left.count()))) break;
  }
  int status = 0;
  if (!reaped_) {
    waitpid(pid_, &status, 0);
    reaped_ = true;
    res_.wall = std::chrono::steady_clock::now() - start_;
    if (WIFEXITED(status)) res_.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) res_.term_signal = WTERMSIG(status);
  }
  return res_;
}

}  // namespace carapace::testing
