// The registry's records (private to the service's .cpp files).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "daemon/backends/egress_sidecar.h"
#include "daemon/core/sandbox_service.h"

namespace carapace::service {

struct SandboxService::TemplateEntry {
  std::string id;
  std::string name;
  TemplateSpec spec;
  NetworkSpec network;               // its sandboxes' default
  std::vector<MountRequest> mounts;  // its sandboxes' default, opened anew at each create
  std::unique_ptr<TemplateBackend> backend;
  uint64_t build_ms = 0;
  std::chrono::system_clock::time_point created_at;
  // Sandboxes made from it that exist or are being made or destroyed (guarded by service mu_).
  uint32_t users = 0;
};

struct SandboxService::SandboxEntry {
  std::string id;
  std::shared_ptr<TemplateEntry> tpl;
  EnvList env;
  uint64_t ttl_s = 0;
  bool from_pool = false;
  uint64_t create_ms = 0;
  std::string parent;
  // Its mounts as the back end got them (set before it is registered, then never changed); their
  // folders stay open for a fork's "inherit".
  std::vector<SandboxMount> mounts;
  std::chrono::system_clock::time_point created_at;
  // Guarded by service mu_.
  std::chrono::system_clock::time_point expires_at;
  std::chrono::steady_clock::time_point deadline;
  // Guarded by `mu`; null once destroyed.
  std::mutex mu;
  std::unique_ptr<Instance> instance;
  // Guarded by `mu`: what the sandbox has now (before registration: what it is to get), its
  // proxy (null without internet) and the proxy URL its agent gave.
  NetworkSpec network;
  std::unique_ptr<EgressSidecar> egress;
  std::string proxy_url;
  // network.credentials with the sentinels its environment holds: an entry keeps its sentinel
  // while its env name stays, through rotations (docs/api.md, Credentials).
  egress::CredentialSet credentials;
};

}  // namespace carapace::service
