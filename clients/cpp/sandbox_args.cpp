#include "clients/cpp/sandbox_args.h"

#include "clients/cpp/credential_args.h"
#include "common/base/flag_values.h"

namespace carapace {

const char kSandboxUsage[] =
    "usage: carapace sandbox [--socket PATH] <command> [options]\n"
    "  --socket PATH   the daemon's socket (default: $CARAPACE_SOCKET, else /run/carapace.sock)\n"
    "commands:\n"
    "  template create (--kernel PATH | --rootfs PATH) [--isolation microvm|process]\n"
    "                  [--rootfs PATH] [--initrd PATH] [--boot-args S] [--name N] [--pool N]\n"
    "                  [--mem MIB] [--vcpus N] [--agent-timeout S]   prints the template id\n"
    "  template ls | template rm ID\n"
    "  create --template ID [--timeout S] [--env K=V]... [MOUNT]... [NETWORK]\n"
    "                  prints the sandbox id\n"
    "  exec ID [--stream] [--env K=V]... [--cwd DIR] [--timeout-ms N] -- ARGV...\n"
    "                  exit status: the command's, 128+signal, 124 on timeout\n"
    "  put ID LOCAL REMOTE | get ID REMOTE LOCAL|-\n"
    "  rm ID | ls [--json] | pause ID | resume ID\n"
    "  fork ID [--count N] [--inherit-mounts [--same-modes] | MOUNT...] [NETWORK]\n"
    "                  prints the children's ids; without NETWORK each child keeps the\n"
    "                  parent's policy; without mounts it has none (inherited ones read-only\n"
    "                  unless --same-modes)\n"
    "  network ID [--allow-host RULE]... [--deny-host RULE]... [CREDENTIALS] | --off\n"
    "                  replaces the sandbox's egress policy live, credentials included (one\n"
    "                  left out is revoked; --off: no way out at all); prints the sandbox as\n"
    "                  JSON, secrets redacted\n"
    "  doc ID SPEC.json FORMAT OUT     FORMAT: docx, pptx, xlsx or pdf (OUT '-' is stdout)\n"
    "MOUNT: --mount host=PATH,guest=PATH[,mode=ro|rw|rw-nodelete]  a host folder beneath the\n"
    "  daemon's mount_roots, seen inside at guest (mode ro by default)\n"
    "NETWORK: [--allow-host RULE]... [--deny-host RULE]... [CREDENTIALS] | --no-internet\n"
    "  the egress policy (without it: the template's); RULE: host, *.suffix, *, IP or CIDR\n"
    "  ([v6] in brackets), each with an optional :port; deny wins\n"
    "CREDENTIALS: [--credential SPEC]... [--upstream ALIAS=https://HOST[:PORT]]...\n"
    "  SPEC: env=NAME,host=H[,host=H2]...,secret-env=VAR|secret-file=PATH,\n"
    "        header=TEMPLATE (last: the rest, commas included, e.g. Authorization: Bearer\n"
    "        {secret}) | query=PARAM\n"
    "  the proxy puts the secret into requests for the hosts; the sandbox sees a sentinel in\n"
    "  $NAME. The secret comes from this program's environment (secret-env) or a file's first\n"
    "  line (secret-file), never the command line. --upstream: plain HTTP to ALIAS inside,\n"
    "  verified TLS to the origin outside (use it for HTTPS APIs with credentials)\n"
    "errors: one line on stderr; exit 2 for a refused request (4xx), 1 for the daemon or "
    "transport\n";

namespace {

Error bad(std::string msg) {
  return as_invalid_input(make_error(std::move(msg)));
}

// Walks one command's arguments: flags with values, and positionals in order.
class ArgCursor {
 public:
  explicit ArgCursor(const std::vector<std::string>& args, size_t start) : args_(args), i_(start) {}
  bool done() const { return i_ >= args_.size(); }
  const std::string& peek() const { return args_[i_]; }
  std::string next() { return args_[i_++]; }
  Result<std::string> value(const std::string& flag) {
    if (done()) return bad(flag + ": missing value");
    return next();
  }
  std::vector<std::string> rest() {
    std::vector<std::string> r(args_.begin() + static_cast<std::ptrdiff_t>(i_), args_.end());
    i_ = args_.size();
    return r;
  }

 private:
  const std::vector<std::string>& args_;
  size_t i_;
};

Result<uint64_t> bounded(const std::string& flag, const std::string& text, uint64_t lo,
                         uint64_t hi) {
  uint64_t v = TRY(parse_u64(flag, text));
  if (v < lo || v > hi)
    return bad(flag + ": must be " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
               text);
  return v;
}

Status nonempty_path(const std::string& what, const std::string& p) {
  if (p.empty()) return bad(what + ": empty path");
  return ok_status();
}

Status parse_template_create(ArgCursor& c, SandboxArgs& out) {
  nlohmann::json& b = out.body;
  while (!c.done()) {
    std::string f = c.next();
    if (f == "--kernel" || f == "--rootfs" || f == "--initrd") {
      std::string v = TRY(c.value(f));
      TRY_STATUS(nonempty_path(f, v));
      b[f.substr(2)] = v;
    } else if (f == "--isolation") {
      std::string v = TRY(c.value(f));
      if (v != "microvm" && v != "process") return bad("--isolation: microvm or process, got " + v);
      b["isolation"] = v;
    } else if (f == "--boot-args") {
      b["boot_args"] = TRY(c.value(f));
    } else if (f == "--name") {
      b["name"] = TRY(c.value(f));
    } else if (f == "--pool") {
      b["pool_size"] = TRY(bounded(f, TRY(c.value(f)), 0, 1024));
    } else if (f == "--mem") {
      b["mem_mib"] = TRY(bounded(f, TRY(c.value(f)), 1, 1u << 20));
    } else if (f == "--vcpus") {
      b["vcpus"] = TRY(bounded(f, TRY(c.value(f)), 1, 254));
    } else if (f == "--agent-timeout") {
      b["agent_timeout_s"] = TRY(bounded(f, TRY(c.value(f)), 1, 3600));
    } else {
      return bad("template create: unknown option '" + f + "'");
    }
  }
  if (!b.contains("kernel") && !b.contains("rootfs"))
    return bad("template create: --kernel or --rootfs is required");
  return ok_status();
}

// One network flag at the cursor into `network`: true when `f` was one.
Result<bool> network_flag(ArgCursor& c, const std::string& f, const std::string& off_flag,
                          sandbox::NetworkRequest& network) {
  return parse_network_flag(
      f, off_flag, [&] { return c.value(f); }, network);
}

// host=PATH,guest=PATH[,mode=M]: one entry of the API's "mounts" (the daemon checks the paths and
// the mode).
Result<nlohmann::json> parse_mount(const std::string& flag, const std::string& value) {
  nlohmann::json m = nlohmann::json::object();
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(',', start);
    if (end == std::string::npos) end = value.size();
    const std::string item = value.substr(start, end - start);
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const char* field = key == "host"    ? "host_path"
                        : key == "guest" ? "guest_path"
                        : key == "mode"  ? "mode"
                                         : nullptr;
    if (eq == std::string::npos || field == nullptr)
      return bad(flag + ": expected host=PATH,guest=PATH[,mode=ro|rw|rw-nodelete], got '" + item +
                 "'");
    if (m.contains(field)) return bad(flag + ": " + key + "= given twice");
    m[field] = item.substr(eq + 1);
    start = end + 1;
  }
  if (!m.contains("host_path") || !m.contains("guest_path"))
    return bad(flag + ": host= and guest= are required");
  return m;
}

Status parse_create(ArgCursor& c, SandboxArgs& out) {
  std::map<std::string, std::string> env;
  sandbox::NetworkRequest network;
  while (!c.done()) {
    std::string f = c.next();
    if (TRY(network_flag(c, f, "--no-internet", network))) continue;
    if (f == "--template") {
      out.body["template"] = TRY(c.value(f));
    } else if (f == "--timeout") {
      out.body["timeout_s"] = TRY(bounded(f, TRY(c.value(f)), 1, 365ull * 24 * 3600));
    } else if (f == "--env") {
      TRY_STATUS(parse_env_pair(TRY(c.value(f)), env));
    } else if (f == "--mount") {
      out.body["mounts"].push_back(TRY(parse_mount(f, TRY(c.value(f)))));
    } else {
      return bad("create: unknown option '" + f + "'");
    }
  }
  if (!out.body.contains("template")) return bad("create: --template ID is required");
  if (!env.empty()) out.body["env"] = env;
  TRY_STATUS(check_network_flags(network, "--no-internet"));
  if (!network.empty()) out.body["network"] = sandbox::network_json(network);
  return ok_status();
}

Status parse_fork(ArgCursor& c, SandboxArgs& out) {
  sandbox::NetworkRequest network;
  while (!c.done()) {
    std::string f = c.next();
    if (TRY(network_flag(c, f, "--no-internet", network))) continue;
    if (f == "--inherit-mounts") {
      out.body["mounts"] = "inherit";
    } else if (f == "--same-modes") {
      out.body["mounts_mode"] = "same";
    } else if (f == "--mount") {
      if (out.body.contains("mounts") && !out.body["mounts"].is_array())
        return bad("fork: --mount and --inherit-mounts exclude each other");
      out.body["mounts"].push_back(TRY(parse_mount(f, TRY(c.value(f)))));
    } else if (f == "--count") {
      out.count = static_cast<uint32_t>(TRY(bounded(f, TRY(c.value(f)), 1, 16)));
    } else {
      return bad("fork: unknown option '" + f + "'");
    }
  }
  if (out.body.contains("mounts_mode") && out.body.value("mounts", nlohmann::json()) != "inherit")
    return bad("fork: --same-modes needs --inherit-mounts");
  TRY_STATUS(check_network_flags(network, "--no-internet"));
  if (!network.empty()) out.body["network"] = sandbox::network_json(network);
  return ok_status();
}

Status parse_network(ArgCursor& c, SandboxArgs& out) {
  sandbox::NetworkRequest network;
  while (!c.done()) {
    std::string f = c.next();
    if (!TRY(network_flag(c, f, "--off", network)))
      return bad("network: unknown option '" + f + "'");
  }
  // An empty body would mean "no internet" to the daemon: make the user say --off for that.
  if (network.empty()) return bad("network: give --allow-host RULE, --deny-host RULE or --off");
  TRY_STATUS(check_network_flags(network, "--off"));
  out.body = sandbox::network_json(network);
  return ok_status();
}

Status parse_exec(ArgCursor& c, SandboxArgs& out) {
  while (!c.done()) {
    const std::string& f = c.peek();
    if (f == "--") {
      c.next();
      break;
    }
    if (f.rfind("--", 0) != 0) break;  // the command starts here
    c.next();
    if (f == "--stream") {
      out.stream = true;
    } else if (f == "--env") {
      TRY_STATUS(parse_env_pair(TRY(c.value(f)), out.exec.env));
    } else if (f == "--cwd") {
      out.exec.cwd = TRY(c.value(f));
    } else if (f == "--timeout-ms") {
      out.exec.timeout_ms = TRY(bounded(f, TRY(c.value(f)), 1, 24ull * 3600 * 1000));
    } else {
      return bad("exec: unknown option '" + f + "'");
    }
  }
  out.exec.argv = c.rest();
  if (out.exec.argv.empty()) return bad("exec: no command (exec ID [options] -- ARGV...)");
  return ok_status();
}

// Exactly `n` positionals after the id.
Status take_positionals(ArgCursor& c, SandboxArgs& out, size_t n, const char* usage) {
  while (!c.done())
    out.paths.push_back(c.next());
  if (out.paths.size() != n) return bad(std::string("usage: ") + usage);
  for (const auto& p : out.paths)
    if (p.empty()) return bad(std::string("empty argument; usage: ") + usage);
  return ok_status();
}

Status no_more(ArgCursor& c, const std::string& cmd) {
  if (!c.done()) return bad(cmd + ": unexpected argument '" + c.peek() + "'");
  return ok_status();
}

}  // namespace

Result<bool> parse_network_flag(const std::string& flag, const std::string& off_flag,
                                const std::function<Result<std::string>()>& value,
                                sandbox::NetworkRequest& out) {
  if (flag == off_flag) {
    out.internet = false;
    return true;
  }
  if (flag == "--credential") {
    out.credentials.push_back(TRY(sandbox::parse_credential_spec(flag, TRY(value()))));
    return true;
  }
  if (flag == "--upstream") {
    out.upstreams.push_back(TRY(sandbox::parse_upstream_spec(flag, TRY(value()))));
    return true;
  }
  if (flag != "--allow-host" && flag != "--deny-host") return false;
  std::string rule = TRY(value());
  if (rule.empty()) return bad(flag + ": empty rule");
  (flag == "--allow-host" ? out.allow_hosts : out.deny_hosts).push_back(std::move(rule));
  return true;
}

Status check_network_flags(const sandbox::NetworkRequest& network, const std::string& off_flag) {
  bool rules = !network.allow_hosts.empty() || !network.deny_hosts.empty();
  if (network.internet == false && rules)
    return bad(off_flag + ": takes no --allow-host or --deny-host (it leaves no way out at all)");
  if (network.allow_hosts.empty() && !network.deny_hosts.empty())
    return bad(
        "--deny-host: needs an --allow-host (deny rules only narrow what allow rules admit)");
  bool extras = !network.credentials.empty() || !network.upstreams.empty();
  if (extras && network.internet == false)
    return bad(off_flag + ": takes no --credential or --upstream (they need a way out)");
  if (extras && network.allow_hosts.empty())
    return bad(
        "--credential and --upstream need an --allow-host naming their hosts (without one the "
        "sandbox has no internet)");
  return ok_status();
}

Status parse_env_pair(const std::string& text, std::map<std::string, std::string>& env) {
  size_t eq = text.find('=');
  if (eq == 0 || eq == std::string::npos) return bad("--env: expected K=V, got '" + text + "'");
  env[text.substr(0, eq)] = text.substr(eq + 1);
  return ok_status();
}

Result<SandboxArgs> parse_sandbox_args(const std::vector<std::string>& all) {
  SandboxArgs out;
  // --socket before the command.
  size_t i = 0;
  while (i < all.size() && all[i] == "--socket") {
    if (i + 1 >= all.size() || all[i + 1].empty()) return bad("--socket: missing path");
    out.socket = all[i + 1];
    i += 2;
  }
  if (i >= all.size() || all[i] == "--help" || all[i] == "-h" || all[i] == "help") {
    out.op = SandboxOp::kHelp;
    return out;
  }
  const std::string& cmd = all[i++];
  ArgCursor c(all, i);
  auto need_id = [&](const std::string& what) -> Status {
    if (c.done() || c.peek().empty() || c.peek().rfind("--", 0) == 0)
      return bad(what + ": missing ID");
    out.id = c.next();
    return ok_status();
  };

  if (cmd == "template") {
    if (c.done()) return bad("template: expected create, ls or rm");
    std::string sub = c.next();
    if (sub == "create") {
      out.op = SandboxOp::kTemplateCreate;
      TRY_STATUS(parse_template_create(c, out));
    } else if (sub == "ls") {
      out.op = SandboxOp::kTemplateList;
      if (!c.done() && c.peek() == "--json") {
        out.json = true;
        c.next();
      }
      TRY_STATUS(no_more(c, "template ls"));
    } else if (sub == "rm") {
      out.op = SandboxOp::kTemplateRemove;
      TRY_STATUS(need_id("template rm"));
      TRY_STATUS(no_more(c, "template rm"));
    } else {
      return bad("template: unknown subcommand '" + sub + "' (create, ls, rm)");
    }
  } else if (cmd == "create") {
    out.op = SandboxOp::kCreate;
    TRY_STATUS(parse_create(c, out));
  } else if (cmd == "exec") {
    out.op = SandboxOp::kExec;
    TRY_STATUS(need_id("exec"));
    TRY_STATUS(parse_exec(c, out));
  } else if (cmd == "put") {
    out.op = SandboxOp::kPut;
    TRY_STATUS(need_id("put"));
    TRY_STATUS(take_positionals(c, out, 2, "put ID LOCAL REMOTE"));
  } else if (cmd == "get") {
    out.op = SandboxOp::kGet;
    TRY_STATUS(need_id("get"));
    TRY_STATUS(take_positionals(c, out, 2, "get ID REMOTE LOCAL|-"));
  } else if (cmd == "doc") {
    out.op = SandboxOp::kDocument;
    TRY_STATUS(need_id("doc"));
    TRY_STATUS(take_positionals(c, out, 3, "doc ID SPEC.json FORMAT OUT"));
    out.format = out.paths[1];
    out.paths.erase(out.paths.begin() + 1);
    if (out.format != "docx" && out.format != "pptx" && out.format != "xlsx" && out.format != "pdf")
      return bad("doc: FORMAT must be docx, pptx, xlsx or pdf, got '" + out.format + "'");
  } else if (cmd == "rm" || cmd == "pause" || cmd == "resume") {
    out.op = cmd == "rm" ? SandboxOp::kRemove
                         : (cmd == "pause" ? SandboxOp::kPause : SandboxOp::kResume);
    TRY_STATUS(need_id(cmd));
    TRY_STATUS(no_more(c, cmd));
  } else if (cmd == "ls") {
    out.op = SandboxOp::kList;
    while (!c.done()) {
      std::string f = c.next();
      if (f != "--json") return bad("ls: unknown option '" + f + "'");
      out.json = true;
    }
  } else if (cmd == "fork") {
    out.op = SandboxOp::kFork;
    TRY_STATUS(need_id("fork"));
    TRY_STATUS(parse_fork(c, out));
  } else if (cmd == "network") {
    out.op = SandboxOp::kNetwork;
    TRY_STATUS(need_id("network"));
    TRY_STATUS(parse_network(c, out));
  } else {
    return bad("unknown command '" + cmd + "' (see carapace sandbox --help)");
  }
  return out;
}

}  // namespace carapace
