// The sandbox behind `carapace mcp`'s tools, through the daemon (docs/api.md): an existing one
// (--sandbox ID), or one made from a template on the first tool call (--template ID) and
// destroyed by close().
#pragma once

#include <string>

#include "clients/cpp/daemon_client.h"
#include "clients/mcp/mcp_server.h"

namespace carapace::mcp {

class DaemonSandbox : public SandboxOps {
 public:
  // Exactly one of template_id and sandbox_id is set. timeout_s 0: the daemon's default TTL.
  // `network`: the egress policy of the sandbox made from the template (empty: the template's).
  // Its credentials and upstreams are the operator's: set_network puts them back into every
  // policy with a way out, since the model's requests never carry them (and the daemon never
  // gives a secret back to be kept).
  DaemonSandbox(sandbox::DaemonClient client, std::string template_id, std::string sandbox_id,
                uint64_t timeout_s, sandbox::NetworkRequest network = {});
  ~DaemonSandbox() override;

  Result<sandbox::ExecResult> run_command(const std::string& command, const std::string& cwd,
                                          uint64_t timeout_ms) override;
  Status write_file(const std::string& path, const std::string& data) override;
  Result<std::string> read_file(const std::string& path) override;
  Result<std::string> generate_document(const nlohmann::json& spec,
                                        const std::string& format) override;
  Result<nlohmann::json> set_network(const sandbox::NetworkRequest& network) override;

  // Destroys the sandbox if this object created it (idempotent).
  Status close();
  const std::string& sandbox_id() const { return sandbox_id_; }

 private:
  Result<std::string> ensure();

  sandbox::DaemonClient client_;
  std::string template_id_;
  std::string sandbox_id_;
  uint64_t timeout_s_;
  sandbox::NetworkRequest network_;
  bool created_ = false;
};

}  // namespace carapace::mcp
