// The daemon's configuration file (`carapace serve --config FILE`): a JSON object whose fields are
// all optional; unknown fields and out-of-range values are refused, naming the field, so a typo
// never silently leaves a limit at its default. Parsing is pure (no I/O but reading the file).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"

namespace carapace::service {

enum class OnShutdown { kDestroy, kPersist };

struct TcpConfig {
  uint16_t port = 0;       // on 127.0.0.1 only; 0 = any free port
  std::string token_file;  // holds the bearer token (first line; required)
};

struct DaemonConfig {
  uint32_t max_sandboxes = 64;
  uint64_t max_memory_mib = 64 * 1024;  // sum of live sandboxes' mem_mib
  uint64_t default_ttl_s = 300;
  uint64_t max_ttl_s = 24 * 3600;
  uint64_t max_request_bytes = 1 << 20;             // JSON bodies
  uint64_t max_upload_bytes = uint64_t{256} << 20;  // PUT files
  double health_interval_s = 10;                    // 0 = no health checks
  double health_timeout_s = 5;
  double header_timeout_s = 10;  // a client must send a request head within this
  // microvm: how long a restored VMM may take to come up (its sockets answering), and how long a
  // hand-out (resume, restore notice, the agent's answer) may take. The defaults suit hosts with
  // hardware virtualization; hosts that emulate it (a nested test harness) raise them.
  double vm_start_timeout_s = 10;
  double hand_out_timeout_s = 10;
  uint32_t max_connections = 64;
  OnShutdown on_shutdown = OnShutdown::kDestroy;
  std::optional<TcpConfig> tcp;
  bool seccomp = true;  // passed to the back ends (BackendContext::seccomp)
  // Each microVM's VMM inside `carapace jail` (BackendContext::jail). Unset: on when the daemon
  // runs as root with seccomp (jail_microvms()).
  std::optional<bool> jail;
  // The CA bundle (PEM) the sandboxes' egress proxies verify TLS origins against: the aliases'
  // origins and the hosts whose CONNECTs are terminated. "": the system bundle. An absolute path.
  std::string egress_ca_file;
  // The host folders whose contents sandboxes may mount (each itself or beneath it; docs/api.md,
  // Mounts): absolute, normalised, not `/`. Empty: every mount is refused.
  std::vector<std::string> mount_roots;
};

// Whether the daemon jails its VMMs: `jail` if set, else root with seccomp on.
bool jail_microvms(const DaemonConfig& c);

Result<DaemonConfig> parse_daemon_config(std::string_view json_text);
// Reads and parses FILE (at most 64 KiB).
Result<DaemonConfig> load_daemon_config(const std::string& path);
// The token in a token file: its first line, trimmed; at least 16 characters.
Result<std::string> load_token_file(const std::string& path);

}  // namespace carapace::service
