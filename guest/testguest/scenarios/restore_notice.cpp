// restore-notice: the guest side of the restore notice. It listens on vsock port 52
// (the guest agent's port), prints a ready line, and waits: the host snapshots it there. Each clone
// restored from that snapshot gets TRANSPORT_RESET (virtio 1.2 §5.10.6.6) and, from the VMM, a
// `post_restore` request in the agent protocol (common/agent/PROTOCOL.md) with the wall clock,
// fresh entropy and a new token. The scenario checks all three are there, prints them, answers like
// the agent and passes.
//
//   testguest.run=restore-notice  (needs --vsock)
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenario.h"
#include "guest/testguest/scenarios/agent_wire.h"
#include "guest/testguest/text.h"

namespace testguest {
namespace {

using namespace virtio;

constexpr uint64_t kWaitCycles = 200'000'000'000;  // the host snapshots and restores meanwhile
constexpr uint64_t kIoCycles = 30'000'000'000;

}  // namespace

ScenarioResult run_restore_notice(const BootInfo& boot) {
  DeviceList list;
  const DeviceInfo* info;
  if (const char* e = start_virtio_device(boot, list, kTypeVsock, info)) return e;
  static VsockStack vs;
  if (const char* e = vs.init(*info)) return e;
  vs.listen(kAgentPort);
  out << "testguest: restore-notice waiting on port " << dec(kAgentPort) << ", cid "
      << dec(vs.guest_cid) << "\n";
  VsockConn* c = vs.accept_within(kWaitCycles);
  if (!c) return "no restore notice arrived";
  static char frame[kMaxAgentFrame];
  uint32_t len = 0;
  if (const char* e = read_agent_frame(vs, *c, frame, len, kIoCycles)) return e;
  const char* end = frame + len;
  char op[16];
  if (!json_string(frame, len, "op", op, sizeof op) || !str_equal(op, "post_restore"))
    return "the notice is not a post_restore request";
  static char token[129];
  if (!json_string(frame, len, "new_token", token, sizeof token))
    return "the notice carries no new token";
  const uint32_t entropy_len = json_string_len(json_member(frame, len, "entropy"), end);
  const uint64_t sec = json_number(json_member(frame, len, "sec"), end);
  if (entropy_len == 0) return "the notice carries no entropy";
  if (sec == 0) return "the notice carries no wall clock";
  out << "testguest: restore notice cid " << dec(vs.guest_cid) << " resets "
      << dec(vs.transport_resets) << " clock " << dec(sec) << " entropy " << dec(entropy_len)
      << " base64 chars token " << token << "\n";
  static char reply[128];
  agent_reply(reply, sizeof reply, json_number(json_member(frame, len, "id"), end),
              ",\"applied\":[\"clock\",\"entropy\",\"token\"]}");
  if (!write_agent_frame(vs, *c, reply, kIoCycles)) return "could not answer the notice";
  // Wait for the host to close, then reset.
  Deadline closing(kIoCycles);
  while (c->state == VsockConn::kEstablished && !c->peer_shutdown && !closing.expired()) {
    vs.poll();
    cpu_relax();
  }
  vs.close(*c);
  vs.dev.reset();
  return nullptr;
}

}  // namespace testguest
