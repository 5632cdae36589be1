#include "bench/restore_qemu.h"

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "bench/bench_support.h"
#include "tests/integration/qemu_microvm.h"
#include "tests/integration/text_file.h"

extern char** environ;

namespace carapace::bench {
namespace {

pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
  return pid;
}

// A QMP connection: line-oriented JSON over a Unix socket.
class Qmp {
 public:
  ~Qmp() {
    if (fd_ >= 0) close(fd_);
  }
  bool connect_to(const std::string& path, std::chrono::milliseconds limit) {
    const auto end = Clock::now() + limit;
    while (Clock::now() < end) {
      fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
      if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        read_line();  // greeting
        return command(R"({"execute":"qmp_capabilities"})").find("return") != std::string::npos;
      }
      close(fd_);
      fd_ = -1;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return false;
  }
  // Sends one command and returns the first reply line that is not an event.
  std::string command(const std::string& json) {
    std::string line = json + "\n";
    if (write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return "";
    for (;;) {
      std::string reply = read_line();
      if (reply.empty() || reply.find("\"event\"") == std::string::npos) return reply;
    }
  }

 private:
  std::string read_line() {
    for (;;) {
      auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      char tmp[4096];
      ssize_t n = read(fd_, tmp, sizeof tmp);
      if (n <= 0) return "";
      buf_.append(tmp, static_cast<size_t>(n));
    }
  }
  int fd_ = -1;
  std::string buf_;
};

double peak_rss_mib(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

void finish(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace

QemuRestoreResult qemu_restore(const std::string& qemu, const std::string& guest,
                               const std::string& cmdline, const std::string& ready,
                               unsigned mem_mib, int runs, const std::string& workdir) {
  QemuRestoreResult r;
  const std::string qmp_path = workdir + "/qmp.sock";
  const std::string console = workdir + "/qemu.console";
  const std::string state = workdir + "/qemu.state";
  std::vector<std::string> base = testing::qemu_microvm_argv(
      qemu, testing::QemuAccel::kKvm, std::to_string(mem_mib), "file:" + console);
  base.insert(base.end(), {"-kernel", guest, "-append", cmdline, "-qmp",
                           "unix:" + qmp_path + ",server=on,wait=off"});
  unlink(qmp_path.c_str());
  unlink(console.c_str());
  pid_t pid = spawn(base);
  if (pid < 0) return {"cannot start " + qemu, {}, 0};
  const auto boot_end = Clock::now() + std::chrono::seconds(60);
  while (testing::read_text_file(console).find(ready) == std::string::npos) {
    if (Clock::now() > boot_end) {
      finish(pid);
      return {"QEMU's guest never printed \"" + ready + "\"", {}, 0};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  {
    Qmp qmp;
    if (!qmp.connect_to(qmp_path, std::chrono::seconds(5))) {
      finish(pid);
      return {"no QMP connection", {}, 0};
    }
    qmp.command(R"({"execute":"stop"})");
    std::string reply =
        qmp.command(R"({"execute":"migrate","arguments":{"uri":"exec:cat > )" + state + "\"}}");
    if (reply.find("error") != std::string::npos) {
      finish(pid);
      return {"QEMU migrate failed: " + reply, {}, 0};
    }
    const auto end = Clock::now() + std::chrono::seconds(60);
    for (;;) {
      std::string s = qmp.command(R"({"execute":"query-migrate"})");
      if (s.find("\"completed\"") != std::string::npos) break;
      if (s.find("\"failed\"") != std::string::npos || Clock::now() > end) {
        finish(pid);
        return {"QEMU migration did not complete: " + s, {}, 0};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  finish(pid);

  std::vector<std::string> incoming = base;
  incoming.push_back("-incoming");
  incoming.push_back("exec:cat " + state);
  for (int i = 0; i < runs; ++i) {
    unlink(qmp_path.c_str());
    const auto t0 = Clock::now();
    pid = spawn(incoming);
    if (pid < 0) return {"cannot start " + qemu, {}, 0};
    Qmp qmp;
    if (!qmp.connect_to(qmp_path, std::chrono::seconds(10))) {
      finish(pid);
      return {"no QMP connection to the restoring QEMU", {}, 0};
    }
    const auto end = Clock::now() + std::chrono::seconds(60);
    for (;;) {
      std::string s = qmp.command(R"({"execute":"query-status"})");
      if (s.find("\"running\"") != std::string::npos) break;
      if (Clock::now() > end) {
        finish(pid);
        return {"restored QEMU never ran: " + s, {}, 0};
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    r.ms.push_back(ms_since(t0));
    r.peak_rss_mib = peak_rss_mib(pid);
    finish(pid);
  }
  unlink(state.c_str());
  return r;
}

}  // namespace carapace::bench
