#include "guest/agent/exec_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "common/base/unique_fd.h"
#include "guest/agent/spawn.h"

namespace carapace::agent {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kReadBytes = 64 * 1024;
// After the process exits, output still in the pipes is read for at most this long: a
// background process it left behind may hold them open.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(200);

struct Pipe {
  UniqueFd r, w;
};

Result<Pipe> make_pipe() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) return sys_error("pipe2");
  return Pipe{UniqueFd(p[0]), UniqueFd(p[1])};
}

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// Releases the exec id and, if the exec is abandoned early, kills what is still running.
struct ExecGuard {
  ExecTable& execs;
  std::optional<uint64_t> id;
  pid_t pgid = -1;
  bool finished = false;
  ~ExecGuard() {
    if (!finished && pgid > 0) ::kill(-pgid, SIGKILL);
    if (id) execs.release(*id);
  }
};

// One output pipe: reads and delivers up to `cap` bytes, counts and drops the rest.
struct OutputPipe {
  UniqueFd fd;
  Stream stream;
  uint64_t produced = 0;

  // false at end of file.
  Result<bool> pump(ExecSink& sink, uint64_t cap, bool* truncated) {
    char buf[kReadBytes];
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (n <= 0) return false;
    uint64_t room = produced < cap ? cap - produced : 0;
    size_t deliver = static_cast<size_t>(std::min<uint64_t>(room, static_cast<uint64_t>(n)));
    produced += static_cast<uint64_t>(n);
    if (deliver < static_cast<size_t>(n)) *truncated = true;
    if (deliver > 0) TRY_STATUS(sink.output(stream, std::string_view(buf, deliver)));
    return true;
  }
};

int wait_ms(std::optional<Clock::time_point> a, std::optional<Clock::time_point> b) {
  std::optional<Clock::time_point> t = a;
  if (b && (!t || *b < *t)) t = b;
  if (!t) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(*t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
}

}  // namespace

Result<ExecOutcome> run_exec(ChildRegistry& children, ExecTable& execs, std::optional<uint64_t> id,
                             const ExecSpec& spec, ExecSink& sink) {
  if (id) TRY_STATUS(execs.reserve(*id));
  ExecGuard guard{execs, id};
  Pipe in = TRY(make_pipe()), out = TRY(make_pipe()), err = TRY(make_pipe());
  const auto start = Clock::now();
  SpawnSpec ss{spec.argv, spec.env, spec.cwd_fd, in.r.get(), out.w.get(), err.w.get()};
  auto watch = TRY(children.spawn([&] { return spawn_process(ss); }));
  guard.pgid = watch->pid;  // a new session: the group id is the pid
  if (id) execs.set_group(*id, watch->pid);
  in.r.reset();
  out.w.reset();
  err.w.reset();

  OutputPipe pipes[2] = {{std::move(out.r), Stream::kStdout}, {std::move(err.r), Stream::kStderr}};
  for (auto& p : pipes)
    set_nonblocking(p.fd.get());
  UniqueFd stdin_w = std::move(in.w);
  std::string_view stdin_left = spec.stdin_data;
  if (stdin_left.empty()) stdin_w.reset();  // EOF at once
  if (stdin_w.valid()) set_nonblocking(stdin_w.get());

  ExecOutcome res;
  std::optional<Clock::time_point> deadline, drain_until;
  if (spec.timeout_ms > 0) deadline = start + std::chrono::milliseconds(spec.timeout_ms);
  bool exited = false;
  while (!exited || pipes[0].fd.valid() || pipes[1].fd.valid()) {
    pollfd fds[5] = {
        {pipes[0].fd.get(), POLLIN, 0}, {pipes[1].fd.get(), POLLIN, 0},
        {stdin_w.get(), POLLOUT, 0},    {exited ? -1 : watch->exited.fd(), POLLIN, 0},
        {sink.peer_fd(), POLLRDHUP, 0},
    };
    int n = ::poll(fds, 5, wait_ms(res.timed_out ? std::nullopt : deadline, drain_until));
    if (n < 0 && errno != EINTR) return sys_error("poll");
    if (n > 0) {
      for (int i = 0; i < 2; ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        if (!TRY(pipes[i].pump(sink, spec.max_output, &res.truncated))) pipes[i].fd.reset();
      }
      if (fds[2].revents & (POLLERR | POLLHUP)) {
        stdin_w.reset();  // the process closed its stdin
      } else if (fds[2].revents & POLLOUT) {
        ssize_t w = ::write(stdin_w.get(), stdin_left.data(), stdin_left.size());
        if (w > 0) stdin_left.remove_prefix(static_cast<size_t>(w));
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || stdin_left.empty()) stdin_w.reset();
      }
      if (fds[3].revents & POLLIN) {
        exited = true;
        drain_until = Clock::now() + kDrainAfterExit;
      }
      if (fds[4].revents & (POLLRDHUP | POLLHUP | POLLERR))
        return make_error("the client hung up during the exec");  // the guard kills the group
    }
    auto now = Clock::now();
    if (deadline && !res.timed_out && now >= *deadline) {
      ::kill(-watch->pid, SIGKILL);
      res.timed_out = true;
    }
    if (drain_until && now >= *drain_until) break;
  }
  guard.finished = true;
  int status = watch->wait_status.load();
  res.exited = WIFEXITED(status);
  res.exit_code = res.exited ? WEXITSTATUS(status) : 0;
  res.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  res.stdout_bytes = pipes[0].produced;
  res.stderr_bytes = pipes[1].produced;
  res.duration_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
  return res;
}

}  // namespace carapace::agent
