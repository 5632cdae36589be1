// The daemon of `carapace serve`: a SandboxService behind an HttpServer on a Unix socket (and
// optionally TCP on 127.0.0.1 with a bearer token). run_daemon() is the whole command: it blocks
// SIGTERM/SIGINT, serves until one arrives, then stops accepting, lets in-flight requests finish,
// and shuts the service down (on_shutdown).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "common/http/http_server.h"
#include "daemon/core/sandbox_service.h"

namespace carapace::service {

struct DaemonOptions {
  std::string socket_path;
  ServiceOptions service;  // state_dir, config, factories, ...
};

class Daemon {
 public:
  static Result<std::unique_ptr<Daemon>> start(DaemonOptions options);
  ~Daemon();
  // Stops the HTTP server (draining requests), then the service. Idempotent.
  void stop();
  SandboxService& service() { return *service_; }
  uint16_t tcp_port() const { return server_ ? server_->tcp_port() : 0; }

 private:
  Daemon() = default;
  std::unique_ptr<SandboxService> service_;
  std::unique_ptr<http::HttpServer> server_;
};

// Whether this host can run microVMs: /dev/kvm opens and KVM_CREATE_VM succeeds.
bool kvm_can_create_vm();
// "vmx", "svm" or "none": the CPU flag in /proc/cpuinfo, reported by GET /health.
std::string cpu_virtualization_flag();

// Serves until SIGTERM or SIGINT; 0 after a clean shutdown, 1 when the daemon could not start.
int run_daemon(DaemonOptions options);

}  // namespace carapace::service
