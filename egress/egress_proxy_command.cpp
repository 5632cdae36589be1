#include "egress/egress_proxy_command.h"

#include <signal.h>
#include <sys/types.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/base/exit_code.h"
#include "common/base/flag_values.h"
#include "common/http/http_server.h"
#include "common/http/json_util.h"
#include "egress/control_routes.h"
#include "egress/policy/egress_policy.h"
#include "egress/proxy/egress_proxy.h"
#include "egress/proxy_confinement.h"

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
    "  --listen-mode MODE    the socket's mode, octal (default 0600; 0666 when the folder is\n"
    "                        what keeps others out and the sandbox runs as another user)\n"
    "  --control PATH        a control socket: GET/PUT /policy {\"allow_hosts\", \"deny_hosts\"},\n"
    "                        GET /stats, GET/PUT /credentials (the only way to give it secrets:\n"
    "                        never on the command line or in the environment)\n"
    "  --ca-file PATH        the CAs an alias's TLS origin must chain to (PEM; default\n"
    "                        /etc/ssl/certs/ca-certificates.crt), read at start\n"
    "  --sandbox NAME        named in every log line\n"
    "  --run-as UID[:GID]    once the sockets are bound, run as UID (GID: the same number by\n"
    "                        default), not dumpable, under a seccomp allowlist (as root, the\n"
    "                        daemon always gives it)\n"
    "  --max-connections N   open connections at once (default 256; past it 503)\n"
    "  --connect-timeout S   per upstream address (default 10)\n"
    "  --idle-timeout S      a tunnel nothing crossed for S seconds is closed (default 300)\n"
    "  Decisions are JSON lines on stderr. SIGTERM/SIGINT: stop.\n";

struct EgressArgs {
  bool help = false;
  std::string listen;
  mode_t listen_mode = 0600;
  std::optional<std::pair<uid_t, gid_t>> run_as;
  std::string control;
  std::string ca_file = egress::kSystemCaBundle;
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
    } else if (f == "--listen-mode") {
      char* end = nullptr;
      const unsigned long m = std::strtoul(v.c_str(), &end, 8);
      if (v.empty() || *end != '\0' || (m != 0600 && m != 0660 && m != 0666))
        return flag_error(f + ": must be 0600, 0660 or 0666");
      a.listen_mode = static_cast<mode_t>(m);
    } else if (f == "--run-as") {
      const size_t colon = v.find(':');
      const uint64_t uid = TRY(parse_u64(f, v.substr(0, colon)));
      const uint64_t gid =
          colon == std::string::npos ? uid : TRY(parse_u64(f, v.substr(colon + 1)));
      if (uid == 0 || uid > 0xfffffffe || gid == 0 || gid > 0xfffffffe)
        return flag_error(f + ": a uid (and gid) other than 0");
      a.run_as = std::make_pair(static_cast<uid_t>(uid), static_cast<gid_t>(gid));
    } else if (f == "--control") {
      a.control = v;
    } else if (f == "--ca-file") {
      a.ca_file = v;
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

// A decision line as the daemon's own log lines look (ts, level, msg first), since the daemon
// runs this program with its stderr: one log, one shape.
void log_json(const char* msg, const std::string& line) {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  tm utc{};
  ::gmtime_r(&now.tv_sec, &utc);
  char ts[96];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(now.tv_nsec / 1000000));
  const bool fields = line.size() > 2 && line.front() == '{';
  std::fprintf(stderr, "{\"ts\": \"%s\", \"level\": \"info\", \"msg\": \"%s\"%s%s\n", ts, msg,
               fields ? ", " : "}", fields ? line.c_str() + 1 : "");
}

void log_decision(const std::string& line) {
  log_json("egress decision", line);
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
  options.listen_mode = parsed->listen_mode;
  options.log = log_decision;
  // Confined before the first client byte is read: nothing a sandbox sends meets a root proxy.
  options.start_closed = parsed->run_as.has_value();
  options.sandbox = parsed->sandbox;
  options.policy = std::move(*policy);
  options.max_connections = parsed->max_connections;
  options.connect_timeout = to_ms(parsed->connect_timeout_s);
  options.idle_timeout = to_ms(parsed->idle_timeout_s);
  options.ca_file = parsed->ca_file;
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
  if (parsed->run_as) {
    if (Status s = egress::confine_proxy(parsed->run_as->first, parsed->run_as->second); !s.ok()) {
      fprintf(stderr, "carapace: error: egress proxy: %s\n", s.error().describe().c_str());
      if (control) control->stop();
      (*proxy)->stop();
      return kExitHostError;
    }
  }
  (*proxy)->open_for_clients();
  log_json("egress proxy ready",
           nlohmann::json{{"sandbox", parsed->sandbox}, {"listen", parsed->listen}}.dump(
               -1, ' ', false, nlohmann::json::error_handler_t::replace));
  int sig = 0;
  while (sigwait(&stop, &sig) != 0) {
  }
  if (control) control->stop();
  (*proxy)->stop();
  return kExitOk;
}

}  // namespace carapace
