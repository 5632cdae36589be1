// One sandbox's egress proxy as the daemon runs it: a `carapace egress-proxy` child
// (egress/README.md) bound where that sandbox's agent can reach it, driven through a control socket
// only the daemon can reach (the policy replaced live, the counters read for /metrics). Its
// decision lines go to the daemon's own stderr, so they are in the daemon's log. A sandbox without
// egress has none: no process, no socket.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "daemon/backends/backend.h"
#include "daemon/backends/microvm_process.h"
#include "egress/credentials/credential_set.h"
#include "egress/credentials/proxy_credentials.h"
#include "egress/policy/egress_policy.h"

namespace carapace::service {

struct EgressSidecarSpec {
  std::string carapace_exe;
  std::string sandbox;       // named in every decision line
  std::string control_path;  // a socket in the daemon's own folder
  EgressPlacement placement;
  egress::EgressPolicy policy;
  // The CAs the proxy verifies origins against ("": its default, the system bundle).
  std::string ca_file;
  std::chrono::milliseconds ready_timeout{5000};
};

class EgressSidecar {
 public:
  // Starts the proxy and waits until its control socket answers (the listener is bound by then).
  static Result<std::unique_ptr<EgressSidecar>> start(EgressSidecarSpec spec);
  ~EgressSidecar() { stop(); }
  EgressSidecar(const EgressSidecar&) = delete;
  EgressSidecar& operator=(const EgressSidecar&) = delete;

  // Replaces the policy; the proxy cuts the open connections the new one denies.
  Status set_policy(const egress::EgressPolicy& policy);
  egress::EgressPolicy policy() const;
  // Replaces the proxy's credentials (empty: every one revoked; the next request that carries a
  // sentinel is refused). The secrets travel only over the 0600 control socket -- never on the
  // proxy's command line or in its environment, which /proc shows.
  Status set_credentials(const egress::CredentialSet& credentials,
                         const std::vector<egress::OriginAlias>& upstreams);
  // The proxy's CA certificate (PEM; GET /ca, asked once): what the sandbox trusts for the hosts
  // whose CONNECTs its proxy terminates. The key never leaves the proxy.
  Result<std::string> ca_pem();
  // The proxy's counters by name (egress_allowed, egress_denied_rule, egress_bytes_up, ...); empty
  // when it does not answer.
  std::map<std::string, uint64_t> counters();
  bool alive() { return process_.alive(); }
  int pid() const { return process_.pid(); }
  const EgressSidecarSpec& spec() const { return spec_; }
  // SIGTERM (the proxy cuts every connection and removes its sockets), SIGKILL after a second.
  void stop();

 private:
  EgressSidecar(EgressSidecarSpec spec, VmmProcess process)
      : spec_(std::move(spec)), process_(std::move(process)) {}
  Result<nlohmann::json> call(const std::string& method, const std::string& target,
                              const std::string& body);

  EgressSidecarSpec spec_;
  VmmProcess process_;
  mutable std::mutex mu_;  // spec_.policy
  bool stopped_ = false;
  std::string ca_pem_;  // cached: a proxy's CA is made once, at its start
};

}  // namespace carapace::service
