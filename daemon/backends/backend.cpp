#include "daemon/backends/backend.h"

#include <dirent.h>

#include "jailer/supervisor.h"

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

void remove_stale_jails(const std::string& jail_base, const std::string& cgroup_prefix) {
  DIR* d = ::opendir(jail_base.c_str());
  if (d == nullptr) return;
  std::vector<std::string> ids;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ids.push_back(e->d_name);
  ::closedir(d);
  for (const auto& id : ids)
    if (Status s = remove_jail_leftovers(jail_base, id, cgroup_prefix + id); !s.ok())
      LOG_WARN("%s: %s", jail_base.c_str(), s.error().describe().c_str());
}

}  // namespace carapace::service
