// egress: the host turns the forwarder to its egress proxy on, moves it, or turns it off.
#include <algorithm>

#include "common/agent/errors.h"
#include "guest/agent/egress_forwarder.h"
#include "guest/agent/egress_trust.h"
#include "guest/agent/ops.h"

namespace carapace::agent {
namespace {

// "transparent_ports": [N, ...] -- 1..65535 each, distinct, at most TransparentEgress::kMaxPorts.
Result<std::vector<uint16_t>> parse_transparent_ports(const json& body) {
  auto it = body.find("transparent_ports");
  std::vector<uint16_t> ports;
  if (it == body.end() || it->is_null()) return ports;
  const char* what = "\"transparent_ports\" must be a list of distinct ports 1-65535, at most 16";
  if (!it->is_array() || it->size() > TransparentEgress::kMaxPorts)
    return protocol_error(code::kBadRequest, what);
  for (const json& p : *it) {
    if (!p.is_number_unsigned() || p.get<uint64_t>() == 0 || p.get<uint64_t>() > 65535)
      return protocol_error(code::kBadRequest, what);
    const auto port = static_cast<uint16_t>(p.get<uint64_t>());
    if (std::find(ports.begin(), ports.end(), port) != ports.end())
      return protocol_error(code::kBadRequest, what);
    ports.push_back(port);
  }
  return ports;
}

// "env": {"NAME": "value", ...} -- at most kMaxEgressEnv names of [A-Za-z_][A-Za-z0-9_]*, values
// of printable ASCII; what every exec then gets besides the proxy variables.
constexpr size_t kMaxEgressEnv = 64;
constexpr size_t kMaxEgressEnvBytes = 256;

bool env_name_ok(const std::string& n) {
  if (n.empty() || n.size() > kMaxEgressEnvBytes || (n[0] >= '0' && n[0] <= '9')) return false;
  for (char c : n)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

Result<std::vector<std::pair<std::string, std::string>>> parse_egress_env(const json& body) {
  std::vector<std::pair<std::string, std::string>> env;
  auto it = body.find("env");
  if (it == body.end() || it->is_null()) return env;
  const char* what =
      "\"env\" must be an object of at most 64 NAME: value strings (printable ASCII)";
  if (!it->is_object() || it->size() > kMaxEgressEnv)
    return protocol_error(code::kBadRequest, what);
  for (const auto& [name, value] : it->items()) {
    if (!env_name_ok(name) || !value.is_string() ||
        value.get<std::string>().size() > kMaxEgressEnvBytes)
      return protocol_error(code::kBadRequest, what);
    for (char c : value.get<std::string>())
      if (c < 0x20 || c > 0x7e) return protocol_error(code::kBadRequest, what);
    env.emplace_back(name, value.get<std::string>());
  }
  return env;
}

// "ca_pem": the proxy's CA (PEM), given with credentials only: written with a bundle, and the
// variables naming them added to `env` (replacing any of the same name). Absent: none, and the
// files of an earlier one removed.
Status apply_egress_ca(const json& body, std::vector<std::pair<std::string, std::string>>& env) {
  auto it = body.find("ca_pem");
  if (it == body.end() || it->is_null()) {
    remove_egress_ca();
    return ok_status();
  }
  if (!it->is_string() || !egress_ca_pem_ok(it->get<std::string>()))
    return protocol_error(code::kBadRequest, "\"ca_pem\" must be one PEM certificate");
  auto trust = install_egress_ca(it->get<std::string>());
  if (!trust.ok()) return protocol_error(code::kIoError, trust.error().describe());
  for (auto& entry : *trust) {
    const std::string& name = entry.first;
    std::erase_if(env, [&name](const auto& e) { return e.first == name; });
    env.push_back(std::move(entry));
  }
  return ok_status();
}

json egress_reply(const EgressForwarder& f) {
  json reply{{"ok", true},
             {"proxy", "http://127.0.0.1:" + std::to_string(f.port())},
             {"listen_port", f.port()},
             {"transparent_ports", f.transparent_ports()}};
  if (!f.transparent_ports().empty()) reply["dns_port"] = f.dns_port();
  return reply;
}

}  // namespace

// {"upstream": "unix:PATH" | "vsock:PORT" | null, "listen_port": N (default 3128, 0: any),
//  "transparent_ports": [N, ...] (default none: no transparent mode),
//  "dns_port": N (default 53, 0: any), "env": {"NAME": "value", ...} (default none),
//  "ca_pem": "-----BEGIN CERTIFICATE-----..." (default none: apply_egress_ca)}.
// A new upstream or new ports replace the old forwarder (its connections are cut); the same
// settings again leave it running (with the new env); null stops it and clears the env. The reply
// names the proxy URL execs now get, or null.
Status op_egress(AgentContext& ctx, ConnectionState&, const Request& req) {
  auto it = req.body.find("upstream");
  if (it == req.body.end() || !(it->is_null() || it->is_string()))
    return protocol_error(code::kBadRequest,
                          "\"upstream\" must be \"unix:PATH\", \"vsock:PORT\" or null");
  const auto port = static_cast<uint16_t>(TRY(opt_u64(req.body, "listen_port", 3128, 65535)));
  TransparentEgress transparent;
  transparent.ports = TRY(parse_transparent_ports(req.body));
  transparent.dns_port = static_cast<uint16_t>(TRY(opt_u64(req.body, "dns_port", 53, 65535)));
  auto env = TRY(parse_egress_env(req.body));
  std::lock_guard lock(ctx.egress_mu);
  if (it->is_null()) {
    ctx.egress.reset();
    ctx.egress_env.clear();
    remove_egress_ca();
    return req.out.send({{"ok", true}, {"proxy", nullptr}});
  }
  const std::string text = it->get<std::string>();
  TRY_STATUS(check_no_nul(text, "upstream"));
  TRY_STATUS(apply_egress_ca(req.body, env));
  auto upstream = parse_forwarder_upstream(text);
  if (!upstream.ok()) return protocol_error(code::kBadRequest, upstream.error().message);
  if (ctx.egress && ctx.egress->upstream().text == text && port != 0 &&
      ctx.egress->port() == port && ctx.egress->transparent_ports() == transparent.ports &&
      (transparent.ports.empty() || ctx.egress->dns_port() == transparent.dns_port)) {
    ctx.egress_env = std::move(env);
    return req.out.send(egress_reply(*ctx.egress));
  }
  ctx.egress.reset();  // frees the ports for a forwarder on the same ones
  transparent.names = ctx.stand_ins;
  auto started = EgressForwarder::start(port, std::move(*upstream), std::move(transparent));
  if (!started.ok()) return protocol_error(code::kIoError, started.error().describe());
  ctx.egress = std::move(*started);
  ctx.egress_env = std::move(env);
  return req.out.send(egress_reply(*ctx.egress));
}

}  // namespace carapace::agent
