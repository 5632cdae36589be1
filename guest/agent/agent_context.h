// What every connection shares: the options, the sandbox root, the token, the children and the
// running execs.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "guest/agent/child_registry.h"
#include "guest/agent/egress_forwarder.h"
#include "guest/agent/exec_table.h"
#include "guest/agent/options.h"
#include "guest/agent/sandbox_root.h"

namespace carapace::agent {

// The sandbox token. Requests are compared in constant time; post_restore replaces it.
class TokenStore {
 public:
  void set(std::string token);
  bool is_set();
  bool matches(std::string_view candidate);

 private:
  std::mutex mu_;
  std::string token_;
};

struct AgentContext {
  AgentContext(AgentOptions o, bool system, SandboxRoot r, std::unique_ptr<ChildRegistry> c)
      : options(std::move(o)), system_mode(system), root(std::move(r)), children(std::move(c)) {}

  AgentOptions options;
  // PID 1 of a guest: post_restore and shutdown act on the machine (clock, entropy, hostname,
  // power). Otherwise (host tests) they are validated and reported as skipped, and shutdown
  // ends only the agent process.
  bool system_mode;
  SandboxRoot root;
  std::unique_ptr<ChildRegistry> children;
  TokenStore token;
  ExecTable execs;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::atomic<int> connections{0};  // being served now (server.cpp caps it)
  // The forwarder to the host's egress proxy, while the host has it on (op "egress"); execs
  // started meanwhile get proxy_env() for its port.
  std::mutex egress_mu;
  std::unique_ptr<EgressForwarder> egress;
  // The transparent mode's stand-ins, kept across forwarders (and into fork children, which are
  // copies of this process) so that an address a program resolved keeps its name.
  std::shared_ptr<FakeAddressTable> stand_ins = std::make_shared<FakeAddressTable>();
  // Set with the forwarder and gone with it: variables every exec gets besides the proxy's --
  // the credentials' sentinels (the secrets themselves never reach the guest).
  std::vector<std::pair<std::string, std::string>> egress_env;
};

}  // namespace carapace::agent
