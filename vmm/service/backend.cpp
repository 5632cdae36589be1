#include "vmm/service/backend.h"

namespace carapace::service {

const char* isolation_name(Isolation i) {
  return i == Isolation::kProcess ? "process" : "microvm";
}

Result<AgentClient> AgentEndpoint::connect() const {
  auto client =
      kind == Kind::kUnix ? AgentClient::connect_unix(path) : AgentClient::connect_vsock_uds(path);
  if (!client.ok()) return client.error();
  client->set_token(token);
  return client;
}

}  // namespace carapace::service
