#include "clients/mcp/mcp_command.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>

#include "clients/cpp/sandbox_args.h"
#include "clients/mcp/daemon_sandbox.h"
#include "clients/mcp/mcp_server.h"
#include "common/base/exit_code.h"
#include "common/base/flag_values.h"

namespace carapace {

const char kMcpUsage[] =
    "usage: carapace mcp [--socket PATH] (--template ID | --sandbox ID) [--out-dir DIR]\n"
    "                    [--timeout S] [--allow-host RULE]... [--deny-host RULE]...\n"
    "                    [--credential SPEC]... [--upstream ALIAS=https://HOST[:PORT]]...\n"
    "                    [--no-internet] [--network-tool]\n"
    "A Model Context Protocol server on stdin/stdout (newline-delimited JSON-RPC 2.0) with the\n"
    "tools run_command, write_file, read_file and generate_document, acting on one sandbox of\n"
    "the daemon (`carapace serve`):\n"
    "  --template ID   create a sandbox from this template on the first tool call; it is\n"
    "                  destroyed when stdin closes or on SIGTERM/SIGINT\n"
    "  --sandbox ID    use this existing sandbox (left running)\n"
    "  --out-dir DIR   generate_document writes documents here on the host (else inline, base64)\n"
    "  --timeout S     time to live of the sandbox it creates (default: the daemon's)\n"
    "  --allow-host RULE, --deny-host RULE, --no-internet\n"
    "                  the egress policy of the sandbox it creates (default: the template's);\n"
    "                  RULE: host, *.suffix, *, IP or CIDR, each with an optional :port\n"
    "  --credential SPEC, --upstream ALIAS=https://HOST[:PORT]\n"
    "                  credentials the sandbox's proxy puts into requests for their hosts, as\n"
    "                  `carapace sandbox create` takes them (carapace sandbox --help):\n"
    "                  env=NAME,host=H,...,secret-env=VAR|secret-file=PATH,header=T|query=P;\n"
    "                  the secret comes from this program's environment or a file, and the\n"
    "                  model never sees it (only a sentinel in $NAME, inside the sandbox)\n"
    "  --network-tool  also offer set_sandbox_network, with which the model may replace its\n"
    "                  sandbox's egress rules (allow any host it names); the credentials and\n"
    "                  upstreams given here stay in force (with --sandbox: they replace the\n"
    "                  sandbox's own at the first such call)\n"
    "  --socket PATH   the daemon's socket (default: $CARAPACE_SOCKET, else /run/carapace.sock)\n"
    "Logs go to stderr; stdout carries only JSON-RPC.\n";

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) {
  g_stop.store(true);
}

Error bad(std::string msg) {
  return as_invalid_input(make_error(std::move(msg)));
}

}  // namespace

Result<McpArgs> parse_mcp_args(const std::vector<std::string>& args) {
  McpArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& f = args[i];
    if (f == "--help" || f == "-h") {
      out.help = true;
      return out;
    }
    auto value = [&]() -> Result<std::string> {
      if (i + 1 >= args.size() || args[i + 1].empty()) return bad(f + ": missing value");
      return args[++i];
    };
    if (TRY(parse_network_flag(f, "--no-internet", value, out.network))) continue;
    if (f == "--network-tool") {
      out.network_tool = true;
    } else if (f == "--socket") {
      out.socket = TRY(value());
    } else if (f == "--template") {
      out.template_id = TRY(value());
    } else if (f == "--sandbox") {
      out.sandbox_id = TRY(value());
    } else if (f == "--out-dir") {
      out.out_dir = TRY(value());
    } else if (f == "--timeout") {
      out.timeout_s = TRY(parse_u64(f, TRY(value())));
      if (out.timeout_s == 0) return bad("--timeout: must be at least 1");
    } else {
      return bad("unknown option '" + f + "'");
    }
  }
  if (out.template_id.empty() == out.sandbox_id.empty())
    return bad("exactly one of --template ID and --sandbox ID is required");
  const sandbox::NetworkRequest& n = out.network;
  if (out.sandbox_id.empty()) {
    TRY_STATUS(check_network_flags(n, "--no-internet"));
    return out;
  }
  if (!n.allow_hosts.empty() || !n.deny_hosts.empty() || n.internet)
    return bad(
        "--allow-host, --deny-host and --no-internet are for the sandbox made from "
        "--template, not an existing one");
  // An existing sandbox's credentials are left as they are; these are only what
  // set_sandbox_network puts back when the model replaces the rules.
  if ((!n.credentials.empty() || !n.upstreams.empty()) && !out.network_tool)
    return bad(
        "--credential and --upstream with --sandbox are for --network-tool (what "
        "set_sandbox_network keeps); the existing sandbox's own stay as they are");
  return out;
}

int cmd_mcp(const std::vector<std::string>& args) {
  auto parsed = parse_mcp_args(args);
  if (!parsed.ok()) {
    fprintf(stderr, "carapace mcp: %s\n", parsed.error().describe().c_str());
    return kExitUsage;
  }
  if (parsed->help) {
    fputs(kMcpUsage, stdout);
    return kExitOk;
  }
  if (!parsed->out_dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(parsed->out_dir, ec)) {
      fprintf(stderr, "carapace mcp: --out-dir %s: not a directory\n", parsed->out_dir.c_str());
      return kExitUsage;
    }
    parsed->out_dir = std::filesystem::absolute(parsed->out_dir, ec).string();
  }
  // SIGTERM/SIGINT end the loop (poll wakes within its period) so the sandbox is destroyed;
  // a client that closes our stdout must not kill us with SIGPIPE before that.
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  sandbox::DaemonClient client(sandbox::resolve_socket(parsed->socket));
  mcp::DaemonSandbox box(std::move(client), parsed->template_id, parsed->sandbox_id,
                         parsed->timeout_s, parsed->network);
  mcp::McpOptions options;
  options.out_dir = parsed->out_dir;
  options.network_tool = parsed->network_tool;
  mcp::McpServer server(box, options);
  fprintf(stderr, "carapace mcp: serving on stdio (daemon %s)\n",
          sandbox::resolve_socket(parsed->socket).c_str());
  Status served = server.serve(STDIN_FILENO, STDOUT_FILENO, g_stop);
  int rc = kExitOk;
  if (!served.ok()) {
    fprintf(stderr, "carapace mcp: %s\n", served.error().describe().c_str());
    rc = kExitHostError;
  }
  if (Status s = box.close(); !s.ok()) {
    fprintf(stderr, "carapace mcp: destroying the sandbox: %s\n", s.error().describe().c_str());
    rc = kExitHostError;
  }
  return rc;
}

}  // namespace carapace
