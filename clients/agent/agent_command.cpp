#include "clients/agent/agent_command.h"

#include <sys/random.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/agent/agent_client.h"
#include "common/agent/wire.h"
#include "common/base/exit_code.h"
#include "common/base/flag_values.h"

namespace carapace {

const char kAgentCommandUsage[] =
    "usage: carapace agent (--uds PATH [--vsock-port N] | --unix PATH) [--token HEX]\n"
    "                      [--io-timeout-ms N] <op> [args]\n"
    "  --uds PATH        the VM's hybrid vsock socket (CONNECT handshake; port 52 by default)\n"
    "  --unix PATH       a Unix socket the agent listens on itself (--listen unix:PATH);\n"
    "                    `--uds PATH --unix` means the same for PATH\n"
    "  --token HEX       the sandbox token (default: $CARAPACE_AGENT_TOKEN)\n"
    "ops:\n"
    "  ping\n"
    "  exec [--cwd DIR] [--env K=V]... [--timeout-ms N] [--max-output N] [--stdin FILE|-]\n"
    "       [--id N] -- ARGV...   exit status: the command's, 128+signal, 124 on timeout\n"
    "  put LOCAL REMOTE [--mode OCTAL] [--parents]\n"
    "  get REMOTE LOCAL           (LOCAL '-' writes to stdout)\n"
    "  ls [PATH] | stat PATH | kill ID [SIGNAL] | shutdown\n"
    "  post-restore [--clock] [--entropy N] [--new-token HEX] [--hostname NAME]\n";

namespace {

const std::vector<std::string> kOps = {"ping", "exec", "put",      "get",         "ls",
                                       "stat", "kill", "shutdown", "post-restore"};

bool is_op(const std::string& s) {
  for (const auto& o : kOps)
    if (o == s) return true;
  return false;
}

Error bad(std::string msg) {
  return as_invalid_input(make_error(std::move(msg)));
}

int fail(const Error& e) {
  fprintf(stderr, "carapace agent: error: %s\n", e.describe().c_str());
  return e.kind == ErrorKind::kInvalidInput && agent_error_code(e).empty() ? kExitUsage
                                                                           : kExitHostError;
}

Result<std::string> read_local(const std::string& path) {
  std::ifstream in;
  std::istream* src = &std::cin;
  if (path != "-") {
    in.open(path, std::ios::binary);
    if (!in) return sys_error("open " + path);
    src = &in;
  }
  std::stringstream ss;
  ss << src->rdbuf();
  return ss.str();
}

Status write_local(const std::string& path, const std::string& data) {
  FILE* f = path == "-" ? stdout : fopen(path.c_str(), "wb");
  if (!f) return sys_error("open " + path);
  bool ok = fwrite(data.data(), 1, data.size(), f) == data.size();
  ok = (path == "-" ? fflush(f) : fclose(f)) == 0 && ok;
  if (!ok) return sys_error("write " + path);
  return {};
}

int run_exec(AgentClient& c, const std::vector<std::string>& args) {
  AgentExecOptions o;
  size_t i = 0;
  auto value = [&](const std::string& flag) -> Result<std::string> {
    if (i + 1 >= args.size()) return bad("exec " + flag + ": missing value");
    return args[++i];
  };
  std::vector<std::string> argv;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    Status s;
    if (a == "--") {
      argv.assign(args.begin() + static_cast<ptrdiff_t>(i) + 1, args.end());
      break;
    } else if (a == "--cwd") {
      auto v = value(a);
      if (!v.ok()) return fail(v.error());
      o.cwd = *v;
    } else if (a == "--env") {
      auto v = value(a);
      if (!v.ok()) return fail(v.error());
      size_t eq = v->find('=');
      if (eq == std::string::npos || eq == 0) return fail(bad("exec --env: expected NAME=VALUE"));
      o.env.emplace_back(v->substr(0, eq), v->substr(eq + 1));
    } else if (a == "--timeout-ms" || a == "--max-output" || a == "--id") {
      auto v = value(a);
      if (!v.ok()) return fail(v.error());
      auto n = parse_u64(a, *v);
      if (!n.ok()) return fail(n.error());
      (a == "--timeout-ms" ? o.timeout_ms : a == "--max-output" ? o.max_output : o.id) = *n;
    } else if (a == "--stdin") {
      auto v = value(a);
      if (!v.ok()) return fail(v.error());
      auto data = read_local(*v);
      if (!data.ok()) return fail(data.error());
      o.stdin_data = std::move(*data);
    } else {
      argv.assign(args.begin() + static_cast<ptrdiff_t>(i), args.end());
      break;
    }
  }
  if (argv.empty()) return fail(bad("exec: no command given"));
  auto out = [](std::string_view b) {
    fwrite(b.data(), 1, b.size(), stdout);
    fflush(stdout);
  };
  auto err = [](std::string_view b) { fwrite(b.data(), 1, b.size(), stderr); };
  auto r = c.exec(argv, o, out, err);
  if (!r.ok()) return fail(r.error());
  if (r->truncated) fprintf(stderr, "carapace agent: output truncated at max_output\n");
  if (r->timed_out) {
    fprintf(stderr, "carapace agent: timed out after %llu ms\n",
            static_cast<unsigned long long>(o.timeout_ms));
    return 124;
  }
  return r->exited ? r->exit_code : 128 + r->signal;
}

int run_post_restore(AgentClient& c, const std::vector<std::string>& args) {
  AgentPostRestore req;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--clock") {
      timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      req.clock = ts;
      continue;
    }
    if (i + 1 >= args.size()) return fail(bad("post-restore: unknown flag or missing value: " + a));
    const std::string& v = args[++i];
    if (a == "--entropy") {
      auto n = parse_u64(a, v);
      if (!n.ok()) return fail(n.error());
      if (*n > agent::kMaxEntropyBytes) return fail(bad("--entropy: at most 4096 bytes"));
      req.entropy.resize(*n);
      if (getrandom(req.entropy.data(), req.entropy.size(), 0) != static_cast<ssize_t>(*n))
        return fail(sys_error("getrandom"));
    } else if (a == "--new-token") {
      req.new_token = v;
    } else if (a == "--hostname") {
      req.hostname = v;
    } else {
      return fail(bad("post-restore: unknown flag " + a));
    }
  }
  auto r = c.post_restore(req);
  if (!r.ok()) return fail(r.error());
  for (const auto& a : *r)
    printf("applied %s\n", a.c_str());
  return kExitOk;
}

void print_info(const AgentFileInfo& f) {
  printf("%-7s %04o %12llu %s\n", f.type.c_str(), f.mode, static_cast<unsigned long long>(f.size),
         f.name.c_str());
}

int run_op(AgentClient& c, const std::string& op, const std::vector<std::string>& a) {
  auto need = [&](size_t lo, size_t hi) { return a.size() >= lo && a.size() <= hi; };
  if (op == "exec") return run_exec(c, a);
  if (op == "post-restore") return run_post_restore(c, a);
  if (op == "ping" && need(0, 0)) {
    auto r = c.ping();
    if (!r.ok()) return fail(r.error());
    printf("agent %s protocol %d uptime_ms %llu token_set %s\n", r->version.c_str(), r->protocol,
           static_cast<unsigned long long>(r->uptime_ms), r->token_set ? "yes" : "no");
    return kExitOk;
  }
  if (op == "put" && a.size() >= 2) {
    uint32_t mode = 0644;
    bool parents = false;
    for (size_t i = 2; i < a.size(); ++i) {
      if (a[i] == "--parents") {
        parents = true;
      } else if (a[i] == "--mode" && i + 1 < a.size()) {
        char* end = nullptr;
        unsigned long m = strtoul(a[++i].c_str(), &end, 8);
        if (a[i].empty() || *end || m > 0777) return fail(bad("put --mode: expected octal 0..777"));
        mode = static_cast<uint32_t>(m);
      } else {
        return fail(bad("put: unexpected '" + a[i] + "'"));
      }
    }
    auto data = read_local(a[0]);
    if (!data.ok()) return fail(data.error());
    Status s = c.put_file(a[1], *data, mode, parents);
    return s.ok() ? kExitOk : fail(s.error());
  }
  if (op == "get" && need(2, 2)) {
    auto r = c.get_file(a[0]);
    if (!r.ok()) return fail(r.error());
    Status s = write_local(a[1], *r);
    return s.ok() ? kExitOk : fail(s.error());
  }
  if (op == "ls" && need(0, 1)) {
    auto r = c.list(a.empty() ? "." : a[0]);
    if (!r.ok()) return fail(r.error());
    for (const auto& f : *r)
      print_info(f);
    return kExitOk;
  }
  if (op == "stat" && need(1, 1)) {
    auto r = c.stat(a[0]);
    if (!r.ok()) return fail(r.error());
    r->name = a[0];
    print_info(*r);
    return kExitOk;
  }
  if (op == "kill" && need(1, 2)) {
    auto id = parse_u64("kill ID", a[0]);
    auto sig = a.size() > 1 ? parse_u64("kill SIGNAL", a[1]) : Result<uint64_t>(uint64_t{15});
    if (!id.ok()) return fail(id.error());
    if (!sig.ok()) return fail(sig.error());
    Status s = c.kill(*id, static_cast<int>(*sig));
    return s.ok() ? kExitOk : fail(s.error());
  }
  if (op == "shutdown" && need(0, 0)) {
    Status s = c.shutdown();
    return s.ok() ? kExitOk : fail(s.error());
  }
  return fail(bad("agent " + op + ": wrong arguments (see carapace agent --help)"));
}

}  // namespace

Result<AgentCommandArgs> parse_agent_command_args(const std::vector<std::string>& args,
                                                  const std::string& env_token) {
  AgentCommandArgs out;
  out.token = env_token;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      out.help = true;
      return out;
    }
    if (is_op(a)) break;
    if (a == "--unix" && (i + 1 >= args.size() || is_op(args[i + 1]))) {
      if (out.socket_path.empty()) return bad("--unix: expected a socket path");
      out.vsock = false;  // `--uds PATH --unix`
      continue;
    }
    if (i + 1 >= args.size()) return bad("unknown flag or missing value: '" + a + "'");
    const std::string& v = args[++i];
    if (a == "--uds" || a == "--unix") {
      if (!out.socket_path.empty() && out.socket_path != v)
        return bad("give one socket path (--uds or --unix)");
      out.socket_path = v;
      if (a == "--unix") out.vsock = false;
    } else if (a == "--vsock-port") {
      uint64_t p = TRY(parse_u64(a, v));
      if (p > 0xffffffffu) return bad("--vsock-port: out of range");
      out.vsock_port = static_cast<uint32_t>(p);
    } else if (a == "--token") {
      out.token = v;
    } else if (a == "--io-timeout-ms") {
      uint64_t ms = TRY(parse_u64(a, v));
      if (ms == 0 || ms > 86'400'000) return bad("--io-timeout-ms: expected 1..86400000");
      out.io_timeout_ms = static_cast<int>(ms);
    } else {
      return bad("unknown flag '" + a + "'");
    }
  }
  if (out.socket_path.empty()) return bad("give the agent's socket: --uds PATH or --unix PATH");
  if (i >= args.size()) return bad("no op given (ping, exec, put, get, ls, stat, kill, ...)");
  out.op = args[i];
  out.op_args.assign(args.begin() + static_cast<ptrdiff_t>(i) + 1, args.end());
  return out;
}

int cmd_agent(const std::vector<std::string>& args) {
  const char* env = std::getenv("CARAPACE_AGENT_TOKEN");
  auto parsed = parse_agent_command_args(args, env ? env : "");
  if (!parsed.ok()) return fail(parsed.error());
  if (parsed->help) {
    fputs(kAgentCommandUsage, stdout);
    return kExitOk;
  }
  auto client = parsed->vsock
                    ? AgentClient::connect_vsock_uds(parsed->socket_path, parsed->vsock_port)
                    : AgentClient::connect_unix(parsed->socket_path);
  if (!client.ok()) return fail(client.error());
  client->set_token(parsed->token);
  client->set_io_timeout_ms(parsed->io_timeout_ms);
  return run_op(*client, parsed->op, parsed->op_args);
}

}  // namespace carapace
