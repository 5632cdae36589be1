#include "guest/agent/connection.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <exception>

#include "common/agent/errors.h"
#include "common/agent/frame.h"
#include "common/agent/wire.h"
#include "guest/agent/ops.h"

namespace carapace::agent {
namespace {

// A client that stops reading our replies for this long is dropped.
constexpr int kSendTimeoutSec = 30;

constexpr OpEntry kOps[] = {
    {"ping", false, op_ping},        {"exec", true, op_exec},
    {"kill", true, op_kill},         {"put_file", true, op_put_file},
    {"get_file", true, op_get_file}, {"list", true, op_list},
    {"stat", true, op_stat},         {"post_restore", true, op_post_restore},
    {"shutdown", true, op_shutdown}, {"egress", true, op_egress},
    {"mount", true, op_mount},       {"umount", true, op_umount},
};

// Handles one request frame; false when the connection must close.
bool handle_frame(AgentContext& ctx, ConnectionState& conn, const std::string& payload) {
  json body = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  Replier anon(conn.fd, nullptr);
  if (body.is_discarded()) {
    (void)anon.error(code::kBadJson, "the frame is not valid JSON");
    return false;
  }
  if (!body.is_object()) {
    (void)anon.error(code::kBadRequest, "a request is a JSON object");
    return false;
  }
  auto id_it = body.find("id");
  if (id_it == body.end() || !id_it->is_number_unsigned()) {
    (void)anon.error(code::kBadRequest, "\"id\" must be a non-negative integer");
    return false;
  }
  uint64_t id = id_it->get<uint64_t>();
  Replier out(conn.fd, id);
  auto op_it = body.find("op");
  if (op_it == body.end() || !op_it->is_string()) {
    (void)out.error(code::kBadRequest, "\"op\" must be a string");
    return false;
  }
  const std::string& op = op_it->get_ref<const std::string&>();
  const OpEntry* entry = find_op(op);
  if (!entry) {
    (void)out.error(code::kUnknownOp, "unknown op '" + op + "'");
    return false;
  }
  // Anything but the next chunk of the pending upload abandons it (its file is removed).
  if (conn.upload && !(entry->handler == op_put_file && conn.upload->id() == id))
    conn.upload.reset();
  if (entry->needs_token) {
    auto tok = body.find("token");
    if (!ctx.token.is_set()) {
      (void)out.error(code::kUnauthorized, "no sandbox token is configured; only ping works");
      return false;
    }
    if (tok == body.end() || !tok->is_string() ||
        !ctx.token.matches(tok->get_ref<const std::string&>())) {
      (void)out.error(code::kUnauthorized, "missing or wrong token");
      return false;
    }
  }
  Status s = entry->handler(ctx, conn, Request{id, body, out});
  if (out.broken()) return false;
  if (!s.ok()) {
    std::string c = error_code(s.error());
    (void)out.error(c, error_detail(s.error()));
    if (closes_connection(c)) return false;
  }
  return !out.broken();
}

}  // namespace

const OpEntry* find_op(std::string_view op) {
  for (const auto& e : kOps)
    if (e.name == op) return &e;
  return nullptr;
}

void serve_connection(AgentContext& ctx, UniqueFd fd) {
  timeval tv{kSendTimeoutSec, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  ConnectionState conn;
  conn.fd = fd.get();
  const FrameLimits limits{kMaxFrameBytes, -1, kFrameStallTimeoutMs};
  std::string payload;
  for (;;) {
    FrameStatus fs = read_frame(fd.get(), limits, &payload);
    if (fs == FrameStatus::kEof || fs == FrameStatus::kIoError) return;
    if (fs != FrameStatus::kOk) {
      Replier anon(fd.get(), nullptr);
      (void)anon.error(fs == FrameStatus::kTooLarge ? code::kFrameTooLarge : code::kBadFrame,
                       frame_status_name(fs));
      return;
    }
    try {
      if (!handle_frame(ctx, conn, payload)) return;
    } catch (const std::exception& e) {
      // Not expected (members are type-checked before use); never lets one request end the agent.
      Replier anon(fd.get(), nullptr);
      (void)anon.error(code::kInternal, e.what());
      return;
    }
  }
}

}  // namespace carapace::agent
