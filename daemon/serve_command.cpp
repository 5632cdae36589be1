#include "daemon/serve_command.h"

#include <limits.h>
#include <unistd.h>

#include <cstdio>

#include "common/base/exit_code.h"
#include "daemon/api/daemon.h"
#include "daemon/backends/backend.h"
#include "daemon/core/daemon_config.h"

namespace carapace {

const char kServeUsage[] =
    "usage: carapace serve --socket PATH --state-dir DIR [--config FILE]\n"
    "  Runs the sandbox daemon: the REST API of docs/api.md over HTTP on a Unix socket\n"
    "  (mode 0600), and on 127.0.0.1 with a bearer token when the config has \"tcp\".\n"
    "  --socket PATH     the API's Unix socket\n"
    "  --state-dir DIR   templates, sandbox records (absolute path; created if missing)\n"
    "  --config FILE     JSON: max_sandboxes, max_memory_mib, default_ttl_s, max_ttl_s,\n"
    "                    max_request_bytes, max_upload_bytes, health_interval_s,\n"
    "                    health_timeout_s, header_timeout_s, max_connections,\n"
    "                    on_shutdown (\"destroy\"|\"persist\"), tcp {port, token_file}, seccomp,\n"
    "                    egress_ca_file (the CAs egress proxies verify origins against),\n"
    "                    mount_roots (the host folders sandboxes may mount)\n"
    "  Logs are JSON lines on stderr. SIGTERM/SIGINT: stop accepting, destroy every sandbox\n"
    "  (and, with on_shutdown \"destroy\", every template), exit 0.\n";

Result<ServeArgs> parse_serve_args(const std::vector<std::string>& args) {
  ServeArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      out.help = true;
      return out;
    }
    std::string* target = a == "--socket"      ? &out.socket_path
                          : a == "--state-dir" ? &out.state_dir
                          : a == "--config"    ? &out.config_path
                                               : nullptr;
    if (!target) return as_invalid_input(make_error("serve: unknown argument '" + a + "'"));
    if (i + 1 >= args.size() || args[i + 1].empty())
      return as_invalid_input(make_error("serve: " + a + " needs a value"));
    *target = args[++i];
  }
  if (out.socket_path.empty()) return as_invalid_input(make_error("serve: --socket is required"));
  if (out.state_dir.empty()) return as_invalid_input(make_error("serve: --state-dir is required"));
  if (out.state_dir[0] != '/')
    return as_invalid_input(make_error("serve: --state-dir must be an absolute path"));
  return out;
}

int cmd_serve(const std::vector<std::string>& args) {
  auto parsed = parse_serve_args(args);
  if (!parsed.ok()) {
    fprintf(stderr, "carapace: error: %s\n", parsed.error().message.c_str());
    return kExitUsage;
  }
  if (parsed->help) {
    fputs(kServeUsage, stdout);
    return kExitOk;
  }
  service::DaemonOptions options;
  options.socket_path = parsed->socket_path;
  options.service.state_dir = parsed->state_dir;
  if (!parsed->config_path.empty()) {
    auto config = service::load_daemon_config(parsed->config_path);
    if (!config.ok()) {
      fprintf(stderr, "carapace: error: %s\n", config.error().describe().c_str());
      return kExitUsage;
    }
    options.service.config = *config;
  }
  char exe[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    fprintf(stderr, "carapace: error: cannot resolve /proc/self/exe\n");
    return kExitHostError;
  }
  options.service.carapace_exe.assign(exe, static_cast<size_t>(n));
  bool kvm = service::kvm_can_create_vm();
  options.service.kvm = kvm;
  options.service.cpu_virtualization = service::cpu_virtualization_flag();
  // The process back end (weaker than a microVM: the workload shares the host kernel).
  options.service.factories[service::Isolation::kProcess] = service::create_process_backend;
  if (kvm)
    options.service.factories[service::Isolation::kMicrovm] = service::create_microvm_backend;
  options.service.default_isolation =
      kvm ? service::Isolation::kMicrovm : service::Isolation::kProcess;
  return service::run_daemon(std::move(options)) == 0 ? kExitOk : kExitHostError;
}

}  // namespace carapace
