// ping, post_restore, shutdown.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "common/agent/errors.h"
#include "common/agent/wire.h"
#include "guest/agent/console.h"
#include "guest/agent/ops.h"
#include "guest/agent/system_ops.h"

namespace carapace::agent {
namespace {

// After the shutdown reply the agent waits this long for the client to close, so the reply
// is read before the machine goes away.
constexpr int kShutdownLingerMs = 1000;

struct ClockValue {
  int64_t sec;
  uint32_t nsec;
};

Result<std::optional<ClockValue>> parse_clock(const json& body) {
  auto it = body.find("clock");
  if (it == body.end()) return std::optional<ClockValue>();
  if (!it->is_object())
    return protocol_error(code::kBadRequest, "\"clock\" must be {\"sec\":S,\"nsec\":N}");
  uint64_t sec = TRY(req_u64(*it, "sec", uint64_t{1} << 40));
  uint64_t nsec = TRY(req_u64(*it, "nsec", 999'999'999));
  return std::optional<ClockValue>(
      ClockValue{static_cast<int64_t>(sec), static_cast<uint32_t>(nsec)});
}

void wait_for_peer_close(int fd) {
  ::shutdown(fd, SHUT_WR);
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kShutdownLingerMs);
  char buf[256];
  for (;;) {
    auto left =
        std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return;
    if (::read(fd, buf, sizeof buf) <= 0) return;
  }
}

}  // namespace

Status op_ping(AgentContext& ctx, ConnectionState&, const Request& req) {
  auto up = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  ctx.started);
  return req.out.send({{"version", kAgentVersion},
                       {"protocol", kProtocolVersion},
                       {"uptime_ms", static_cast<uint64_t>(up.count())},
                       {"token_set", ctx.token.is_set()}});
}

Status op_post_restore(AgentContext& ctx, ConnectionState&, const Request& req) {
  // Everything is checked before anything is changed.
  auto clock = TRY(parse_clock(req.body));
  std::string entropy = TRY(opt_bytes(req.body, "entropy", kMaxEntropyBytes));
  auto new_token = TRY(opt_string(req.body, "new_token"));
  auto hostname = TRY(opt_string(req.body, "hostname"));
  if (new_token && !valid_token(*new_token))
    return protocol_error(code::kBadRequest, "\"new_token\" must be 1.." +
                                                 std::to_string(kMaxTokenChars) + " hex digits");
  if (hostname && !valid_hostname(*hostname))
    return protocol_error(code::kBadRequest, "\"hostname\" must be 1..63 of [A-Za-z0-9-]");

  json applied = json::array(), skipped = json::array();
  auto apply = [&](const char* what, auto&& fn) -> Status {
    if (!ctx.system_mode) {
      skipped.push_back(what);
      return {};
    }
    TRY_STATUS(fn());
    applied.push_back(what);
    return {};
  };
  if (clock) TRY_STATUS(apply("clock", [&] { return set_wall_clock(clock->sec, clock->nsec); }));
  if (!entropy.empty()) TRY_STATUS(apply("entropy", [&] { return add_entropy(entropy); }));
  if (hostname) TRY_STATUS(apply("hostname", [&] { return set_hostname(*hostname); }));
  if (new_token) {
    ctx.token.set(*new_token);  // the agent's own state: applied in every mode
    applied.push_back("token");
  }
  return req.out.send({{"ok", true}, {"applied", applied}, {"skipped", skipped}});
}

Status op_shutdown(AgentContext& ctx, ConnectionState& conn, const Request& req) {
  TRY_STATUS(req.out.send({{"ok", true}}));
  wait_for_peer_close(conn.fd);
  console_line("shutdown requested");
  ctx.execs.kill_all();
  if (ctx.system_mode) power_off();
  // Host mode: end the process without running destructors under the other threads' feet.
  _exit(0);
}

}  // namespace carapace::agent
