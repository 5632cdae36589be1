#include "daemon/backends/backend.h"

namespace carapace::service {

const char* isolation_name(Isolation i) {
  return i == Isolation::kProcess ? "process" : "microvm";
}

Result<AgentClient> AgentEndpoint::connect() const {
  auto client = kind == Kind::kUnix ? AgentClient::connect_unix(path, follow_socket_link)
                                    : AgentClient::connect_vsock_uds(path, agent::kAgentVsockPort,
                                                                     5000, follow_socket_link);
  if (!client.ok()) return client.error();
  client->set_token(token);
  return client;
}

}  // namespace carapace::service
