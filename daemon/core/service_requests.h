// What SandboxService takes and gives: typed requests (parsed from JSON by request_json.h, or
// built by a caller in the same process) and views of its templates and sandboxes (rendered as
// JSON by the routes). The service checks every request itself, whoever made it: the limits
// below are the API's (docs/api.md), shared by the JSON parser so both say the same.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/backends/backend.h"
#include "daemon/core/api_result.h"
#include "egress/credentials/credential_spec.h"
#include "egress/credentials/proxy_credentials.h"
#include "egress/policy/egress_policy.h"

namespace carapace::service {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// An inclusive range of an integer field; the one message for a value outside it (or of
// another type) is range_error's.
struct FieldRange {
  int64_t lo;
  int64_t hi;
  bool contains(int64_t v) const { return v >= lo && v <= hi; }
};
ApiError range_error(const char* field, FieldRange r);

inline constexpr FieldRange kVcpusRange{1, 32};
inline constexpr FieldRange kMemMibRange{16, 65536};
inline constexpr FieldRange kPoolSizeRange{0, 64};
inline constexpr FieldRange kAgentTimeoutRange{1, 3600};
inline constexpr FieldRange kForkCountRange{1, 16};
inline constexpr size_t kMaxBootArgs = 2048;
inline constexpr size_t kMaxPath = 4096;
inline constexpr size_t kMaxEnvVars = 1024;
inline constexpr size_t kMaxEgressRules = 256;

// A sandbox's way out (docs/api.md, Egress): none at all, or its own host-side proxy under
// `policy` (allow_hosts / deny_hosts), adding `credentials` to the requests it lets through
// (docs/api.md, Credentials): their secrets live here and in the proxy only, never in a record,
// a log line or a view.
struct NetworkSpec {
  bool internet = false;
  egress::EgressPolicy policy;
  std::vector<egress::CredentialSpec> credentials;
  // Plain-HTTP aliases the proxy sends on to their TLS origins, credentials added.
  std::vector<egress::OriginAlias> upstreams;
};

// A workspace mount as asked (docs/api.md, Mounts), and as the views show it: the host folder,
// where the sandbox sees it, and how it may use it. Checked and opened by daemon/core/mounts.h.
struct MountRequest {
  std::string host_path;
  std::string guest_path;
  MountMode mode = MountMode::kRo;
};

// POST /templates.
struct TemplateRequest {
  std::optional<std::string> name;     // default: the template's id
  std::optional<Isolation> isolation;  // default: the daemon's
  TemplateSpec spec;                   // spec.isolation is set by the service
  NetworkSpec network;                 // its sandboxes' default
  std::vector<MountRequest> mounts;    // its sandboxes' default
};

// POST /sandboxes.
struct SandboxRequest {
  std::string template_id;
  std::optional<uint64_t> timeout_s;  // default: the daemon's default_ttl_s
  EnvList env;
  std::optional<NetworkSpec> network;  // default: the template's
  // Replaces the template's list when given (also as []); absent: the template's.
  std::optional<std::vector<MountRequest>> mounts;
};

// POST /sandboxes/{id}/fork.
struct ForkRequest {
  uint32_t count = 1;
  std::optional<NetworkSpec> network;  // the children's; default: the parent's
  // The children's mounts: none (the default), the parent's ("inherit"; rw and rw-nodelete become
  // ro unless keep_mount_modes, "mounts_mode": "same"), or a list of their own.
  enum class Mounts { kNone, kInherit, kList } mounts = Mounts::kNone;
  bool keep_mount_modes = false;
  std::vector<MountRequest> mount_list;  // kList
};

// POST /sandboxes/{id}/timeout.
struct TimeoutRequest {
  uint64_t timeout_s = 0;
};

struct TemplateView {
  std::string id;
  std::string name;
  TemplateSpec spec;
  NetworkSpec network;               // its sandboxes' default
  std::vector<MountRequest> mounts;  // its sandboxes' default
  PoolStats pool;
  uint64_t build_ms = 0;
  std::chrono::system_clock::time_point created_at;
  uint32_t sandboxes = 0;  // live ones made from it
  nlohmann::json backend;  // the back end's own description
};

struct SandboxView {
  enum class State { kRunning, kPaused, kDestroyed };
  std::string id;
  std::string template_id;
  Isolation isolation = Isolation::kProcess;
  std::chrono::system_clock::time_point created_at;
  std::chrono::system_clock::time_point expires_at;
  uint64_t timeout_s = 0;
  bool from_pool = false;
  uint64_t create_ms = 0;
  std::string parent;  // empty unless forked
  NetworkSpec network;
  std::string proxy;  // the proxy URL inside the sandbox; empty without internet
  std::vector<MountRequest> mounts;
  State state = State::kDestroyed;
  nlohmann::json backend;  // the instance's own description
};

struct HealthView {
  std::string version;
  std::vector<Isolation> isolations;
  Isolation default_isolation = Isolation::kProcess;
  bool kvm = false;
  std::string cpu_virtualization;
  bool jailed_vmms = false;
  size_t sandboxes = 0;
  size_t templates = 0;
};

// `base` overridden by `top` (names compared exactly).
EnvList merge_env(const EnvList& base, const EnvList& top);

}  // namespace carapace::service
