#include "guest/agent/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "common/agent/errors.h"
#include "common/agent/wire.h"

namespace carapace::agent {
namespace {

constexpr char kDefaultPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// posix_spawnp would search the agent's own PATH; an exec searches the PATH it was given.
Result<std::string> find_program(const std::string& name, const std::vector<std::string>& env) {
  if (name.empty()) return protocol_error(code::kExecFailed, "argv[0] is empty");
  if (name.find('/') != std::string::npos) return name;
  std::string path = kDefaultPath;
  for (const auto& e : env)
    if (e.starts_with("PATH=")) path = e.substr(5);
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find(':', i);
    if (j == std::string::npos) j = path.size();
    std::string dir = path.substr(i, j - i);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    i = j + 1;
  }
  return protocol_error(code::kExecFailed, "'" + name + "' not found in PATH");
}

// Frees what posix_spawn_* initialised, on every path out.
struct SpawnAttrs {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnAttrs() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnAttrs() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

}  // namespace

std::vector<std::string> default_exec_env() {
  return {std::string("PATH=") + kDefaultPath, "HOME=/root", "LANG=C.UTF-8", "TERM=dumb"};
}

Result<pid_t> spawn_process(const SpawnSpec& spec) {
  if (spec.argv.empty()) return protocol_error(code::kBadRequest, "\"argv\" is empty");
  std::string program = TRY(find_program(spec.argv[0], spec.env));

  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : spec.env)
    envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  SpawnAttrs sa;
  int rc = posix_spawn_file_actions_adddup2(&sa.actions, spec.stdin_fd, STDIN_FILENO);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&sa.actions, spec.stdout_fd, STDOUT_FILENO);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&sa.actions, spec.stderr_fd, STDERR_FILENO);
  if (rc == 0 && spec.cwd_fd >= 0)
    rc = posix_spawn_file_actions_addfchdir_np(&sa.actions, spec.cwd_fd);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  // The agent blocks SIGCHLD and ignores SIGPIPE; the child must start with neither.
  if (rc == 0) rc = posix_spawnattr_setsigmask(&sa.attr, &none);
  if (rc == 0) rc = posix_spawnattr_setsigdefault(&sa.attr, &all);
  if (rc == 0)
    rc = posix_spawnattr_setflags(
        &sa.attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  if (rc != 0) return sys_error("posix_spawn attributes", rc);

  pid_t pid = -1;
  rc = posix_spawn(&pid, program.c_str(), &sa.actions, &sa.attr, argv.data(), envp.data());
  if (rc != 0) return protocol_error(code::kExecFailed, "'" + program + "': " + std::strerror(rc));
  return pid;
}

}  // namespace carapace::agent
