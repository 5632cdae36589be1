#include "egress/egress_proxy_command.h"

#include <signal.h>

#include <cstdio>
#include <memory>

#include "common/base/exit_code.h"
#include "common/base/flag_values.h"
#include "common/http/http_server.h"
#include "common/http/json_util.h"
#include "egress/control_routes.h"
#include "egress/policy/egress_policy.h"
#include "egress/proxy/egress_proxy.h"

namespace carapace {
namespace {

constexpr char kUsage[] =
    "usage: carapace egress-proxy --listen PATH [options]\n"
    "  The egress proxy of one sandbox: HTTP/1.1 CONNECT host:port (TLS passes through),\n"
    "  absolute-form http:// requests and SOCKS5 CONNECT (no authentication; a name, or an\n"
    "  address a network rule allows) on the Unix socket PATH. Names are resolved here and\n"
    "  every address is checked before it is dialled: loopback, link-local (the metadata\n"
    "  service), multicast, reserved and this host's own addresses are always refused, private\n"
    "  and CGNAT ones unless a network rule allows them. Nothing is allowed by default.\n"
    "options:\n"
    "  --allow-host RULE     allow a destination (repeatable): name, *.suffix, *, an address or\n"
    "                        CIDR network, each with an optional :port\n"
    "  --deny-host RULE      deny a destination (repeatable; deny wins)\n"
    "  --control PATH        a control socket: GET/PUT /policy {\"allow_hosts\", \"deny_hosts\"},\n"
    "                        GET /stats\n"
    "  --sandbox NAME        named in every log line\n"
    "  --max-connections N   open connections at once (default 256; past it 503)\n"
    "  --connect-timeout S   per upstream address (default 10)\n"
    "  --idle-timeout S      a tunnel nothing crossed for S seconds is closed (default 300)\n"
    "  Decisions are JSON lines on stderr. SIGTERM/SIGINT: stop.\n";

struct EgressArgs {
  bool help = false;
  std::string listen;
  std::string control;
  std::string sandbox;
  std::vector<std::string> allow;
  std::vector<std::string> deny;
  uint64_t max_connections = 256;
  double connect_timeout_s = 10;
  double idle_timeout_s = 300;
};

Result<EgressArgs> parse_args(const std::vector<std::string>& args) {
  EgressArgs a;
  auto on_flag = [&a](const std::string& f, const std::string& v) -> Status {
    if (f == "--listen") {
      a.listen = v;
    } else if (f == "--control") {
      a.control = v;
    } else if (f == "--sandbox") {
      a.sandbox = v;
    } else if (f == "--allow-host") {
      a.allow.push_back(v);
    } else if (f == "--deny-host") {
      a.deny.push_back(v);
    } else if (f == "--max-connections") {
      a.max_connections = TRY(parse_u64(f, v));
      if (a.max_connections == 0 || a.max_connections > 65536)
        return flag_error(f + ": must be 1-65536");
    } else if (f == "--connect-timeout") {
      a.connect_timeout_s = TRY(parse_seconds(f, v));
    } else if (f == "--idle-timeout") {
      a.idle_timeout_s = TRY(parse_seconds(f, v));
    } else {
      return flag_error("unknown option " + f + " (see carapace egress-proxy --help)");
    }
    return ok_status();
  };
  TRY_STATUS(for_each_flag_pair(args, a.help, on_flag));
  if (!a.help && a.listen.empty()) return flag_error("--listen PATH is required");
  return a;
}

std::chrono::milliseconds to_ms(double s) {
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
}

}  // namespace

int cmd_egress_proxy(const std::vector<std::string>& args) {
  auto parsed = parse_args(args);
  if (!parsed.ok()) {
    fprintf(stderr, "carapace: error: %s\n", parsed.error().message.c_str());
    return kExitUsage;
  }
  if (parsed->help) {
    fputs(kUsage, stdout);
    return kExitOk;
  }
  auto policy = egress::EgressPolicy::parse(parsed->allow, parsed->deny);
  if (!policy.ok()) {
    fprintf(stderr, "carapace: error: %s\n", policy.error().message.c_str());
    return kExitUsage;
  }
  // The stop signals are blocked before any thread starts, so every thread inherits the mask and
  // only sigwait() below sees them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  egress::EgressProxyOptions options;
  options.listen_path = parsed->listen;
  options.sandbox = parsed->sandbox;
  options.policy = std::move(*policy);
  options.max_connections = parsed->max_connections;
  options.connect_timeout = to_ms(parsed->connect_timeout_s);
  options.idle_timeout = to_ms(parsed->idle_timeout_s);
  auto proxy = egress::EgressProxy::start(std::move(options));
  if (!proxy.ok()) {
    fprintf(stderr, "carapace: error: egress proxy: %s\n", proxy.error().describe().c_str());
    return kExitHostError;
  }
  std::unique_ptr<http::HttpServer> control;
  if (!parsed->control.empty()) {
    http::Router router;
    auto routes = egress::add_control_routes(router, **proxy);
    http::HttpServerOptions server;
    server.unix_path = parsed->control;
    auto started = routes.ok() ? http::HttpServer::start(std::move(server), std::move(router))
                               : Result<std::unique_ptr<http::HttpServer>>(routes.error());
    if (!started.ok()) {
      fprintf(stderr, "carapace: error: egress control socket: %s\n",
              started.error().describe().c_str());
      return kExitHostError;
    }
    control = std::move(*started);
  }
  fprintf(stderr, "{\"event\": \"egress_proxy_ready\", \"listen\": \"%s\"}\n",
          parsed->listen.c_str());
  int sig = 0;
  while (sigwait(&stop, &sig) != 0) {
  }
  if (control) control->stop();
  (*proxy)->stop();
  return kExitOk;
}

}  // namespace carapace
