// vsock-bench: the guest side of bench/guest_io_bench.cpp's vsock measurements (the host times
// everything). Listens on
//   5000  echo: every byte goes back (round-trip latency, echo throughput);
//   5001  sink: bytes are consumed; when the host shuts down its side, the guest answers
//         "done <bytes>\n" and shuts down (host -> guest throughput);
//   5002  source: the guest sends testguest.bench.bytes= bytes (default 64 MiB), then shuts down
//         (guest -> host throughput);
//   5999  quit: the scenario ends.
// Prints "testguest: vsock-bench ready" once listening. Packets carry up to 32 KiB each way; each
// connection advertises a 1 MiB receive buffer.
#include "guest/testguest/cmdline.h"
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenario.h"
#include "guest/testguest/text.h"
#include "guest/testguest/virtio/vsock.h"

namespace testguest {
namespace {

using namespace virtio;

constexpr uint32_t kEcho = 5000, kSink = 5001, kSource = 5002, kQuit = 5999;
constexpr uint32_t kPayload = 32 * 1024;
// The receive buffer each connection advertises. Host -> guest throughput is bound by credit
// round trips (a credit update every quarter of it) when the VMM's event loop wakes slowly: on a
// loaded 2-core host 256 KiB gave ~15 MB/s, 1 MiB ~70 MB/s.
constexpr uint32_t kBufAlloc = 1024 * 1024;
constexpr uint64_t kIdleTimeout = 200'000'000'000;  // the whole bench, roughly 40-200 s

struct Session {
  VsockConn* conn = nullptr;
  uint32_t pending = 0;    // echo: bytes read but not yet sent back
  uint64_t to_send = 0;    // source: bytes left
  bool finishing = false;  // our SHUTDOWN is out; waiting for the peer's RST
  uint8_t buf[kPayload];
};

void step(VsockStack& vs, Session& s) {
  VsockConn& c = *s.conn;
  if (c.state != VsockConn::kEstablished || s.finishing) return;
  switch (c.local_port) {
    case kEcho:
      if (s.pending == 0 && c.readable()) s.pending = vs.read(c, s.buf, kPayload);
      if (s.pending) {
        const uint32_t sent = vs.write(c, s.buf, s.pending);
        for (uint32_t i = sent; i < s.pending; ++i)
          s.buf[i - sent] = s.buf[i];
        s.pending -= sent;
      }
      if (c.peer_shutdown && !s.pending && !c.readable()) s.finishing = vs.shutdown(c);
      break;
    case kSink:
      vs.discard(c, c.readable());
      if (c.peer_shutdown && !c.readable()) {
        char line[40] = "done ";
        uint32_t n = 5;
        n += write_decimal(line + n, c.bytes_in);
        line[n++] = '\n';
        if (vs.write(c, line, n) == n) s.finishing = vs.shutdown(c);
      }
      break;
    case kSource:
      while (s.to_send) {
        const uint32_t chunk = s.to_send < kPayload ? static_cast<uint32_t>(s.to_send) : kPayload;
        const uint32_t sent = vs.write(c, s.buf, chunk, /*batch=*/true);
        s.to_send -= sent;
        if (sent < chunk) break;
      }
      vs.flush();
      if (!s.to_send) s.finishing = vs.shutdown(c);
      break;
    default:
      break;
  }
}

}  // namespace

ScenarioResult run_vsock_bench(const BootInfo& boot) {
  DeviceList list;
  const DeviceInfo* info;
  if (const char* e = start_virtio_device(boot, list, kTypeVsock, info)) return e;
  const bool event_idx = !cmdline_has_word(boot.cmdline, "testguest.bench.no-event-idx");
  static VsockStack vs;
  if (const char* e = vs.init(*info, 128, kPayload, kPayload, kBufAlloc, event_idx)) return e;
  const uint64_t source_bytes = cmdline_u64(boot.cmdline, "testguest.bench.bytes=", 64ull << 20);
  const uint32_t ports[] = {kEcho, kSink, kSource, kQuit};
  for (uint32_t port : ports)
    vs.listen(port);
  static Session sessions[VsockStack::kMaxConns];
  for (Session& s : sessions)
    for (uint32_t i = 0; i < kPayload; ++i)
      s.buf[i] = static_cast<uint8_t>(i * 7);
  out << "testguest: vsock-bench ready, cid " << dec(vs.guest_cid) << ", event_idx "
      << dec((vs.features & kFEventIdx) ? 1 : 0) << "\n";
  Deadline deadline(kIdleTimeout);
  bool quit = false;
  uint64_t connections = 0;
  while (!quit) {
    if (deadline.expired()) return "the host never asked to quit";
    vs.poll();
    while (VsockConn* c = vs.accepted()) {
      ++connections;
      if (c->local_port == kQuit) {
        quit = true;
        vs.close(*c);
        continue;
      }
      // The stack reuses closed connections: a session may still point at this one.
      for (Session& s : sessions) {
        if (s.conn == c) s.conn = nullptr;
      }
      for (Session& s : sessions) {
        if (s.conn && s.conn->state != VsockConn::kClosed) continue;
        s.conn = c;
        s.pending = 0;
        s.finishing = false;
        s.to_send = c->local_port == kSource ? source_bytes : 0;
        break;
      }
    }
    for (Session& s : sessions) {
      if (s.conn) step(vs, s);
    }
    cpu_relax();
  }
  out << "testguest: vsock-bench served " << dec(connections) << " connections, "
      << dec(vs.rx_.notifies() + vs.tx_.notifies()) << " notifies\n";
  vs.dev.reset();
  return nullptr;
}

}  // namespace testguest
