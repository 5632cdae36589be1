#include "tests/agent/agent_harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace carapace::testing {
namespace {

int remove_entry(const char* path, const struct stat*, int, FTW*) {
  ::remove(path);
  return 0;
}

}  // namespace

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::vector<std::string> dir_names(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(path.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

AgentProcess::AgentProcess(std::vector<std::string> extra, std::string binary, bool with_token) {
  char tmpl[] = "/tmp/carapace-agent-test-XXXXXX";
  if (!::mkdtemp(tmpl)) {
    error_ = "mkdtemp failed";
    return;
  }
  dir_ = tmpl;
  root_ = dir_ + "/root";
  outside_ = dir_ + "/outside";
  socket_ = dir_ + "/agent.sock";
  log_path_ = dir_ + "/agent.log";
  ::mkdir(root_.c_str(), 0755);
  ::mkdir(outside_.c_str(), 0755);
  write_text_file(outside_ + "/secret", kSecret);

  std::vector<std::string> args = {binary, "--listen", "unix:" + socket_, "--root", root_};
  if (with_token) args.insert(args.end(), {"--token", kTestToken});
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pid_ = ::fork();
  if (pid_ == 0) {
    // The agent must not outlive a test binary that crashes before its destructor runs.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until) {
    if (log().find("carapace-agent: ready") != std::string::npos) {
      started_ = true;
      return;
    }
    if (!alive()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  error_ = "the agent did not become ready; its log:\n" + log();
}

AgentProcess::~AgentProcess() {
  int status;
  if (pid_ > 0 && alive(&status)) {
    ::kill(pid_, SIGTERM);
    if (!wait_exit(5000, &status)) {
      ::kill(pid_, SIGKILL);
      wait_exit(5000, &status);
    }
  }
  // A sanitizer report from the (sanitized) host agent fails the test that provoked it.
  std::string text = log();
  for (const char* marker : {"ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer"})
    EXPECT_EQ(text.find(marker), std::string::npos) << "agent log:\n" << text;
  if (!dir_.empty()) ::nftw(dir_.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

std::string AgentProcess::log() const {
  return read_text_file(log_path_);
}

Result<AgentClient> AgentProcess::try_connect() const {
  AgentClient c = TRY(AgentClient::connect_unix(socket_));
  c.set_token(kTestToken);
  c.set_io_timeout_ms(30'000);
  return c;
}

AgentClient AgentProcess::connect() const {
  auto c = try_connect();
  if (!c.ok()) {
    fprintf(stderr, "connect to the agent: %s\nagent log:\n%s\n", c.error().describe().c_str(),
            log().c_str());
    std::abort();
  }
  return std::move(*c);
}

bool AgentProcess::alive(int* status) {
  if (pid_ <= 0) return false;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == 0) return true;
  if (r == pid_ && status) *status = st;
  pid_ = -1;
  return false;
}

bool AgentProcess::wait_exit(int ms, int* status) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (!alive(status)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

}  // namespace carapace::testing
