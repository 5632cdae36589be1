// The operations of the protocol (common/agent/PROTOCOL.md), one handler each. A handler sends
// its reply frames through req.out and returns ok, or returns an error for the connection to
// report (see protocol/errors.h for how an Error becomes a wire code).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "guest/agent/agent_context.h"
#include "guest/agent/request.h"
#include "guest/agent/upload.h"

namespace carapace::agent {

// What one connection keeps between its requests.
struct ConnectionState {
  int fd = -1;
  std::unique_ptr<Upload> upload;  // a put_file whose last chunk has not come yet
  bool close_after_reply = false;
};

struct Request {
  uint64_t id;
  const json& body;
  Replier& out;
};

using OpHandler = Status (*)(AgentContext&, ConnectionState&, const Request&);

struct OpEntry {
  std::string_view name;
  bool needs_token;
  OpHandler handler;
};

// The handler for `op`, or nullptr.
const OpEntry* find_op(std::string_view op);

Status op_ping(AgentContext& ctx, ConnectionState& conn, const Request& req);
Status op_exec(AgentContext& ctx, ConnectionState& conn, const Request& req);
Status op_kill(AgentContext& ctx, ConnectionState& conn, const Request& req);
Status op_put_file(AgentContext& ctx, ConnectionState& conn, const Request& req);
Status op_get_file(AgentContext& ctx, ConnectionState& conn, const Request& req);
Status op_list(AgentContext& ctx, ConnectionState& conn, const Request& req);
Status op_stat(AgentContext& ctx, ConnectionState& conn, const Request& req);
Status op_post_restore(AgentContext& ctx, ConnectionState& conn, const Request& req);
Status op_shutdown(AgentContext& ctx, ConnectionState& conn, const Request& req);
Status op_egress(AgentContext& ctx, ConnectionState& conn, const Request& req);
Status op_mount(AgentContext& ctx, ConnectionState& conn, const Request& req);
Status op_umount(AgentContext& ctx, ConnectionState& conn, const Request& req);

}  // namespace carapace::agent
