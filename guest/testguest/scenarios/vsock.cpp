// vsock: the virtio-vsock device (virtio 1.2 §5.10) with the VMM's Unix-socket host side.
//   - testguest.vsock.port=P: listens on P, prints "testguest: vsock listening on port P", accepts
//     one host connection ("CONNECT P" on the VMM's socket) and echoes every byte until the host
//     shuts down, then shuts down its side and waits for the VMM's RST;
//   - testguest.vsock.connect=Q: connects to host port Q (the VMM connects to <uds>_Q), sends
//     "hello from guest cid N\n", expects "hello from host\n" back, shuts down.
#include "guest/testguest/virtio/vsock.h"
#include "guest/testguest/cmdline.h"
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenario.h"
#include "guest/testguest/text.h"

namespace testguest {
namespace {

using namespace virtio;

constexpr uint64_t kTimeout = 30'000'000'000;  // each phase; the host test drives the pace
constexpr uint64_t kCloseWait = 3'000'000'000;

bool cmdline_number(const char* cmdline, const char* key, uint32_t& n) {
  char value[12];
  if (!cmdline_value(cmdline, key, value, sizeof value) || value[0] == '\0') return false;
  n = 0;
  for (const char* p = value; *p >= '0' && *p <= '9'; ++p)
    n = n * 10 + static_cast<uint32_t>(*p - '0');
  return true;
}

// Orderly close (virtio 1.2 §5.10.6.5): SHUTDOWN, then the peer's RST, else our own after a
// while. An RST right away would be an abortive close: the VMM may drop data it still holds for
// a slow host reader.
const char* orderly_close(VsockStack& vs, VsockConn& c) {
  vs.shutdown(c);
  Deadline closing(kCloseWait);
  while (c.state == VsockConn::kEstablished && !closing.expired()) {
    vs.poll();
    cpu_relax();
  }
  const bool peer_reset = c.state == VsockConn::kClosed;
  out << "testguest: vsock connection to host port " << dec(c.peer_port)
      << (peer_reset ? " reset by the host after our shutdown\n" : " closed by us\n");
  vs.close(c);
  return nullptr;
}

// Echoes until the peer has shut down and everything it sent went back.
const char* echo(VsockStack& vs, VsockConn& c) {
  static uint8_t pending[4096];
  uint32_t pending_len = 0;
  Deadline deadline(kTimeout);
  while (c.state == VsockConn::kEstablished) {
    vs.poll();
    if (pending_len == 0 && c.readable()) pending_len = vs.read(c, pending, sizeof pending);
    if (pending_len) {
      const uint32_t sent = vs.write(c, pending, pending_len);
      for (uint32_t i = sent; i < pending_len; ++i)
        pending[i - sent] = pending[i];
      pending_len -= sent;
    }
    if (c.peer_shutdown && pending_len == 0 && c.readable() == 0) break;
    if (deadline.expired()) return "echo timed out (the host did not shut the connection down)";
    cpu_relax();
  }
  out << "testguest: vsock echoed " << dec(c.bytes_out) << " of " << dec(c.bytes_in)
      << " bytes on port " << dec(c.local_port) << " from host port " << dec(c.peer_port) << "\n";
  if (c.bytes_out != c.bytes_in) return "not every byte was echoed";
  return orderly_close(vs, c);
}

const char* serve(VsockStack& vs, uint32_t port) {
  vs.listen(port);
  out << "testguest: vsock listening on port " << dec(port) << "\n";
  VsockConn* c = vs.accept_within(kTimeout);
  if (!c) return "no host connection arrived";
  out << "testguest: vsock accepted host port " << dec(c->peer_port) << ", peer buf_alloc "
      << dec(c->peer_buf_alloc) << "\n";
  return echo(vs, *c);
}

const char* call_host(VsockStack& vs, uint32_t port) {
  VsockConn* c = vs.connect(port);
  if (!c) return "could not send the connection request";
  Deadline deadline(kTimeout);
  while (c->state == VsockConn::kConnecting) {
    if (deadline.expired()) return "the connection request was not answered";
    vs.poll();
    cpu_relax();
  }
  if (c->refused) return "the host refused the connection (nobody listening at <uds>_PORT?)";
  if (c->state != VsockConn::kEstablished) return "connection closed before it was established";
  char hello[48] = "hello from guest cid ";
  uint32_t n = 21;
  n += write_decimal(hello + n, vs.guest_cid);
  hello[n++] = '\n';
  uint32_t sent = 0;
  while (sent < n) {
    sent += vs.write(*c, hello + sent, n - sent);
    if (deadline.expired()) return "no credit to send the greeting";
    vs.poll();
  }
  static const char kReply[] = "hello from host\n";
  char reply[sizeof kReply] = {};
  uint32_t got = 0;
  while (got < sizeof kReply - 1) {
    vs.poll();
    got += vs.read(*c, reply + got, sizeof kReply - 1 - got);
    if (c->state != VsockConn::kEstablished && !c->readable()) break;
    if (deadline.expired()) return "no reply from the host";
    cpu_relax();
  }
  if (!bytes_equal(reply, kReply, sizeof kReply - 1)) return "wrong reply from the host";
  out << "testguest: vsock host port " << dec(port) << " replied\n";
  return orderly_close(vs, *c);
}

}  // namespace

ScenarioResult run_vsock(const BootInfo& boot) {
  DeviceList list;
  const DeviceInfo* info;
  if (const char* e = start_virtio_device(boot, list, kTypeVsock, info)) return e;
  uint32_t listen_port = 0, connect_port = 0;
  const bool listen = cmdline_number(boot.cmdline, "testguest.vsock.port=", listen_port);
  const bool call = cmdline_number(boot.cmdline, "testguest.vsock.connect=", connect_port);
  if (!listen && !call) return "give testguest.vsock.port= and/or testguest.vsock.connect=";
  static VsockStack vs;
  if (const char* e = vs.init(*info)) return e;
  out << "testguest: vsock guest cid " << dec(vs.guest_cid) << ", features " << hex(vs.offered)
      << "\n";
  if (listen) {
    if (const char* e = serve(vs, listen_port)) return e;
  }
  if (call) {
    if (const char* e = call_host(vs, connect_port)) return e;
  }
  vs.dev.reset();
  return nullptr;
}

}  // namespace testguest
