// A `carapace run --isolation process` sandbox for tests and benches: starts it in the background
// with a fresh id, token file and socket path, waits until its agent answers ping with the token,
// and on destruction stops it (SIGTERM to the supervisor) and checks nothing was left behind.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/agent/agent_client.h"
#include "tests/integration/process_cgroups.h"
#include "tests/integration/process_runner.h"

namespace carapace::testing {

inline std::string process_rootfs() {
  if (const char* env = std::getenv("CARAPACE_ROOTFS")) return env;
  return CARAPACE_ROOTFS;
}

inline bool path_exists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

// Every cgroup directory of a process sandbox, in any hierarchy.
inline std::vector<std::string> sandbox_cgroup_dirs(const std::string& id) {
  std::vector<std::string> out = sandbox_v1_cgroup_dirs(id);
  if (path_exists("/sys/fs/cgroup/carapace/process-" + id))
    out.push_back("/sys/fs/cgroup/carapace/process-" + id);
  return out;
}

class ProcessSandbox {
 public:
  static constexpr char kToken[] = "5eedc0ffee";
  static constexpr char kBase[] = "/srv/carapace-process-test";

  explicit ProcessSandbox(std::vector<std::string> extra = {}, std::string id = {}) {
    static int counter = 0;
    id_ = id.empty() ? "pt-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) : id;
    dir_ = "/tmp/carapace-process-test-" + id_;
    ::mkdir(dir_.c_str(), 0700);
    sock_ = dir_ + "/agent.sock";
    token_file_ = dir_ + "/token";
    {
      std::ofstream t(token_file_);
      t << kToken << "\n";
    }
    ::chmod(token_file_.c_str(), 0600);
    std::vector<std::string> argv = {CARAPACE_BINARY, "run",
                                     "--isolation",   "process",
                                     "--rootfs",      process_rootfs(),
                                     "--agent-sock",  sock_,
                                     "--id",          id_,
                                     "--token-file",  token_file_,
                                     "--agent",       CARAPACE_AGENT,
                                     "--chroot-base", kBase};
    argv.insert(argv.end(), extra.begin(), extra.end());
    proc_ = std::make_unique<RunningProcess>(argv);
  }
  ~ProcessSandbox() {
    stop();
    ::unlink(token_file_.c_str());
    ::rmdir(dir_.c_str());
  }

  // Pings until the agent answers with the token set (true), or `limit` passes.
  bool wait_ready(std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (auto c = connect(); c.ok()) {
        auto p = c->ping();
        if (p.ok() && p->token_set) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  Result<AgentClient> connect() {
    auto c = AgentClient::connect_unix(sock_);
    if (c.ok()) {
      c->set_token(kToken);
      c->set_io_timeout_ms(60000);
    }
    return c;
  }
  // Runs `sh -c script` in the sandbox; stdout and stderr together in *out.
  Result<AgentExecResult> sh(const std::string& script, std::string* out) {
    auto c = TRY(connect());
    AgentExecOptions o;
    o.timeout_ms = 60000;
    auto add = [out](std::string_view s) {
      if (out) out->append(s);
    };
    return c.exec({"/bin/sh", "-c", script}, o, add, add);
  }
  // SIGTERM to the supervisor; its result (once).
  ProcessResult stop() {
    if (!stopped_) {
      stopped_ = true;
      if (proc_->started()) ::kill(proc_->pid(), SIGTERM);
      result_ = proc_->finish(std::chrono::seconds(30));
    }
    return result_;
  }
  // The supervisor's result without signalling it (it ends when the agent does).
  ProcessResult wait_end(std::chrono::milliseconds limit) {
    if (!stopped_) {
      stopped_ = true;
      result_ = proc_->finish(limit);
    }
    return result_;
  }
  // Nothing left: jail folder, cgroups, socket link. "" when clean, else what is left.
  std::string leftovers() const {
    std::string left;
    if (path_exists(std::string(kBase) + "/" + id_)) left += " jail folder;";
    for (const auto& d : sandbox_cgroup_dirs(id_))
      left += " cgroup " + d + ";";
    if (path_exists(sock_)) left += " agent socket link;";
    return left;
  }

  const std::string& id() const { return id_; }
  const std::string& sock() const { return sock_; }
  RunningProcess& process() { return *proc_; }

 private:
  std::string id_, dir_, sock_, token_file_;
  std::unique_ptr<RunningProcess> proc_;
  bool stopped_ = false;
  ProcessResult result_;
};

}  // namespace carapace::testing
