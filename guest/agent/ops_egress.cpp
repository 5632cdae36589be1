// egress: the host turns the forwarder to its egress proxy on, moves it, or turns it off.
#include "common/agent/errors.h"
#include "guest/agent/egress_forwarder.h"
#include "guest/agent/ops.h"

namespace carapace::agent {

// {"upstream": "unix:PATH" | "vsock:PORT" | null, "listen_port": N (default 3128, 0: any)}.
// A new upstream replaces the old forwarder (its connections are cut); null stops it. The reply
// names the proxy URL execs now get, or null.
Status op_egress(AgentContext& ctx, ConnectionState&, const Request& req) {
  auto it = req.body.find("upstream");
  if (it == req.body.end() || !(it->is_null() || it->is_string()))
    return protocol_error(code::kBadRequest,
                          "\"upstream\" must be \"unix:PATH\", \"vsock:PORT\" or null");
  const auto port = static_cast<uint16_t>(TRY(opt_u64(req.body, "listen_port", 3128, 65535)));
  std::lock_guard lock(ctx.egress_mu);
  if (it->is_null()) {
    ctx.egress.reset();
    return req.out.send({{"ok", true}, {"proxy", nullptr}});
  }
  const std::string text = it->get<std::string>();
  TRY_STATUS(check_no_nul(text, "upstream"));
  auto upstream = parse_forwarder_upstream(text);
  if (!upstream.ok()) return protocol_error(code::kBadRequest, upstream.error().message);
  ctx.egress.reset();  // frees the port for a forwarder on the same one
  auto started = EgressForwarder::start(port, std::move(*upstream));
  if (!started.ok()) return protocol_error(code::kIoError, started.error().describe());
  ctx.egress = std::move(*started);
  const std::string url = "http://127.0.0.1:" + std::to_string(ctx.egress->port());
  return req.out.send({{"ok", true}, {"proxy", url}, {"listen_port", ctx.egress->port()}});
}

}  // namespace carapace::agent
