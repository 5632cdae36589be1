// Starts a real carapace-agent (--listen unix:PATH --root DIR --token T) in a fresh temporary
// directory and stops it at the end of the test. Layout of the directory:
//   root/       the sandbox root handed to --root
//   outside/    a sibling the agent must never reach; holds "secret" (docs/security.md #28)
//   agent.sock  the agent's socket, agent.log its console output
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/agent/agent_client.h"
#include "tests/integration/text_file.h"

namespace carapace::testing {

inline constexpr char kTestToken[] = "c0ffee0123456789abcdef";
inline constexpr char kSecret[] = "top secret outside the sandbox";

class AgentProcess {
 public:
  // `binary` defaults to the host build; `extra` flags are appended. Without `with_token` the
  // agent starts with no token at all.
  explicit AgentProcess(std::vector<std::string> extra = {},
                        std::string binary = CARAPACE_AGENT_HOST, bool with_token = true);
  ~AgentProcess();
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  // False (with the reason in error()) when the agent did not print "ready" in time.
  bool started() const { return started_; }
  const std::string& error() const { return error_; }

  const std::string& dir() const { return dir_; }
  const std::string& root() const { return root_; }
  const std::string& outside() const { return outside_; }
  const std::string& socket_path() const { return socket_; }
  std::string log() const;
  pid_t pid() const { return pid_; }

  // A client with the test token and a 30 s I/O timeout.
  Result<AgentClient> try_connect() const;
  // As try_connect; a failure to connect ends the test binary (nothing sensible can follow).
  AgentClient connect() const;
  // Whether the process still runs; reaps it when it has ended (exit status in *status).
  bool alive(int* status = nullptr);
  // Waits up to `ms` for the process to end.
  bool wait_exit(int ms, int* status);

 private:
  std::string dir_, root_, outside_, socket_, log_path_, error_;
  pid_t pid_ = -1;
  bool started_ = false;
};

// Test file helpers (paths are host paths; read_text_file and write_text_file come with
// text_file.h).
bool exists(const std::string& path);
// Names in a directory, sorted.
std::vector<std::string> dir_names(const std::string& path);

}  // namespace carapace::testing
