#include "daemon/api/daemon.h"

#include <fcntl.h>
#include <linux/kvm.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/base/unique_fd.h"
#include "common/http/auth.h"
#include "common/http/json_util.h"
#include "daemon/api/api_common.h"
#include "daemon/core/json_log.h"

namespace carapace::service {

bool kvm_can_create_vm() {
  UniqueFd kvm(::open("/dev/kvm", O_RDWR | O_CLOEXEC));
  if (!kvm.valid()) return false;
  UniqueFd vm(::ioctl(kvm.get(), KVM_CREATE_VM, 0));
  return vm.valid();
}

std::string cpu_virtualization_flag() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    std::string w;
    while (words >> w)
      if (w == "vmx" || w == "svm") return w;
    return "none";
  }
  return "none";
}

Result<std::unique_ptr<Daemon>> Daemon::start(DaemonOptions options) {
  const DaemonConfig& config = options.service.config;
  http::HttpServerOptions http;
  http.unix_path = options.socket_path;
  http.max_connections = config.max_connections;
  http.limits.max_body_bytes = config.max_request_bytes;
  http.limits.header_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(config.header_timeout_s * 1000));
  http.max_total_body_bytes = std::max<uint64_t>(config.max_upload_bytes, 256ull << 20);
  if (config.tcp) {
    std::string token = TRY(load_token_file(config.tcp->token_file));
    http.tcp_port = config.tcp->port;
    // The Unix socket is 0600 (its mode is the access check); TCP is open to every local user,
    // so there a bearer token is checked before a body byte is read.
    http.admit = [token](const http::HttpRequest& head) -> std::optional<http::HttpResponse> {
      if (head.transport != http::Transport::kTcp) return std::nullopt;
      if (http::bearer_token_matches(head.headers, token)) return std::nullopt;
      http::HttpResponse r =
          http::error_response(http::ErrorCode::kUnauthorized, "a valid bearer token is required");
      r.headers.set("WWW-Authenticate", "Bearer");
      return r;
    };
  }

  std::unique_ptr<Daemon> d(new Daemon());
  d->service_ = TRY(SandboxService::start(std::move(options.service)));
  http::Router router;
  TRY_STATUS(add_all_routes(router, *d->service_));
  auto server = http::HttpServer::start(std::move(http), std::move(router));
  if (!server.ok()) {
    d->service_->shutdown();
    return server.take_error();
  }
  d->server_ = std::move(*server);
  if (d->server_->tcp_port() != 0)
    json_log("info", "listening on tcp",
             {{"address", "127.0.0.1"}, {"port", d->server_->tcp_port()}});
  return d;
}

Daemon::~Daemon() {
  stop();
}

void Daemon::stop() {
  if (server_) server_->stop();
  if (service_) service_->shutdown();
}

int run_daemon(DaemonOptions options) {
  // Blocked before any thread exists, so every thread inherits the mask and only sigwait() below
  // ever sees these signals.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::string socket = options.socket_path;
  std::string state = options.service.state_dir;
  auto daemon = Daemon::start(std::move(options));
  if (!daemon.ok()) {
    json_log("error", "cannot start", {{"error", daemon.error().describe()}});
    return 1;
  }
  json_log("info", "serving", {{"socket", socket}, {"state_dir", state}});
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  json_log("info", "shutting down", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
  (*daemon)->stop();
  json_log("info", "stopped");
  return 0;
}

}  // namespace carapace::service
