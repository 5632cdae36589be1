// agent-ping: a stand-in for the guest agent that runs on this host (user space cannot; see
// ../shared/HOST-NOTES.md). It serves the agent protocol (common/agent/PROTOCOL.md) on vsock port
// 52, one connection at a time, for as long as the host wants: `ping` (no token), `post_restore`
// (with the current token; it replaces the token and reports what was applied) and `shutdown`
// (replies, then the scenario passes and the VM resets). Wrong or missing tokens get
// `unauthorized`, anything else `unknown_op`; both close the connection, as the agent does. It
// handles TRANSPORT_RESET, so clones of a snapshot taken while it waits keep serving. Services use
// it to exercise their wait-for-agent, pool and post-restore paths over real KVM.
//
//   testguest.run=agent-ping [testguest.agent.token=HEX | carapace.token=HEX]  (needs --vsock)
// `carapace.token=` is what the real agent reads (the sandbox daemon's templates set it); the
// scenario's own word wins when both are given.
#include "guest/testguest/cmdline.h"
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenario.h"
#include "guest/testguest/scenarios/agent_wire.h"
#include "guest/testguest/text.h"

namespace testguest {
namespace {

using namespace virtio;

constexpr uint64_t kIoCycles = 30'000'000'000;

char current_token[129];

enum class After { kKeep, kClose, kShutdown };

After serve_frame(VsockStack& vs, VsockConn& c, const char* frame, uint32_t len) {
  static char reply[256];
  const char* end = frame + len;
  const uint64_t id = json_number(json_member(frame, len, "id"), end);
  char op[24], token[129];
  if (!json_string(frame, len, "op", op, sizeof op)) {
    agent_reply(reply, sizeof reply, id,
                ",\"error\":{\"code\":\"bad_request\",\"message\":\"no op\"}}");
    write_agent_frame(vs, c, reply, kIoCycles);
    return After::kClose;
  }
  if (str_equal(op, "ping")) {
    agent_reply(reply, sizeof reply, id,
                current_token[0] ? ",\"version\":\"testguest\",\"protocol\":1,\"uptime_ms\":0,"
                                   "\"token_set\":true}"
                                 : ",\"version\":\"testguest\",\"protocol\":1,\"uptime_ms\":0,"
                                   "\"token_set\":false}");
    return write_agent_frame(vs, c, reply, kIoCycles) ? After::kKeep : After::kClose;
  }
  const bool authorized = current_token[0] != '\0' &&
                          json_string(frame, len, "token", token, sizeof token) &&
                          str_equal(token, current_token);
  if (!authorized) {
    agent_reply(reply, sizeof reply, id,
                ",\"error\":{\"code\":\"unauthorized\",\"message\":\"wrong token\"}}");
    write_agent_frame(vs, c, reply, kIoCycles);
    return After::kClose;
  }
  if (str_equal(op, "post_restore")) {
    const bool new_token =
        json_string(frame, len, "new_token", current_token, sizeof current_token);
    out << "testguest: agent-ping post_restore, cid " << dec(vs.guest_cid) << ", resets "
        << dec(vs.transport_resets) << (new_token ? ", new token" : "") << "\n";
    agent_reply(reply, sizeof reply, id,
                new_token ? ",\"applied\":[\"clock\",\"entropy\",\"token\"]}"
                          : ",\"applied\":[\"clock\",\"entropy\"]}");
    return write_agent_frame(vs, c, reply, kIoCycles) ? After::kKeep : After::kClose;
  }
  if (str_equal(op, "shutdown")) {
    agent_reply(reply, sizeof reply, id, ",\"ok\":true}");
    write_agent_frame(vs, c, reply, kIoCycles);
    return After::kShutdown;
  }
  agent_reply(reply, sizeof reply, id,
              ",\"error\":{\"code\":\"unknown_op\",\"message\":\"not served by agent-ping\"}}");
  write_agent_frame(vs, c, reply, kIoCycles);
  return After::kClose;
}

void wait_for_peer_close(VsockStack& vs, VsockConn& c) {
  Deadline closing(kIoCycles);
  while (c.state == VsockConn::kEstablished && !c.peer_shutdown && !closing.expired()) {
    vs.poll();
    cpu_relax();
  }
  vs.close(c);
}

}  // namespace

ScenarioResult run_agent_ping(const BootInfo& boot) {
  DeviceList list;
  const DeviceInfo* info;
  if (const char* e = start_virtio_device(boot, list, kTypeVsock, info)) return e;
  if (boot.cmdline == nullptr ||
      (!cmdline_value(boot.cmdline, "testguest.agent.token=", current_token,
                      sizeof current_token) &&
       !cmdline_value(boot.cmdline, "carapace.token=", current_token, sizeof current_token)))
    current_token[0] = '\0';
  static VsockStack vs;
  if (const char* e = vs.init(*info)) return e;
  vs.listen(kAgentPort);
  out << "testguest: agent-ping ready on port " << dec(kAgentPort) << ", cid " << dec(vs.guest_cid)
      << "\n";
  static char frame[kMaxAgentFrame];
  for (;;) {
    VsockConn* c;
    while (!(c = vs.accepted())) {
      vs.poll();
      cpu_relax();
    }
    for (;;) {
      uint32_t len = 0;
      if (read_agent_frame(vs, *c, frame, len, kIoCycles) != nullptr) {
        vs.close(*c);  // the host went away or sent garbage: wait for the next connection
        break;
      }
      const After next = serve_frame(vs, *c, frame, len);
      if (next == After::kKeep) continue;
      wait_for_peer_close(vs, *c);
      if (next == After::kShutdown) {
        vs.dev.reset();
        return nullptr;
      }
      break;
    }
  }
}

}  // namespace testguest
