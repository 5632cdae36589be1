// virtio-vsock on fake guest memory: the host↔device half of the data path. A fake driver plays
// the guest (tests/unit/devices/vsock/fake_vsock_guest.h); the numbers for a real guest kernel
// come from the test guest.
//
//   BM_VsockRoundTrip/<bytes>/<loop>: host writes `bytes` on its Unix socket, the device
//     delivers them into an rx buffer, the fake guest answers with the same bytes on tx, the host
//     reads them back. loop = 0: the bench thread runs the socket handler itself
//     (service_host_sockets: device cost only); loop = 1: the real event-loop thread wakes up
//     for the host write (epoll wakeup included).
//   BM_VsockHostToGuest/<rx buffer>: bulk host → guest throughput through rx buffers of the
//     given size, the guest returning credit as Linux does.
//   BM_VsockGuestToHost: bulk guest → host throughput in 64 KiB packets within the credit.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/base/log.h"
#include "tests/unit/devices/vsock/fake_vsock_guest.h"
#include "tests/unit/devices/vsock/host_sockets.h"

namespace carapace::vsock::fake {
namespace {

constexpr uint64_t kCid = 3;

// One device, a fake guest and an established host-initiated connection to guest port 52.
struct Setup {
  explicit Setup(uint32_t rx_buf, bool run_loop) : guest(mem, kCid, rx_buf) {
    set_log_level(LogLevel::kError);
    char tmpl[] = "/tmp/vsock-bench-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) std::abort();
    dir = tmpl;
    loop = std::move(EventLoop::create()).value();
    dev = std::move(VirtioVsock::create(kCid, dir + "/v.sock", *loop)).value();
    if (!guest.activate(*dev).ok()) std::abort();
    host = unix_connect(dir + "/v.sock");
    send_all(host.get(), "CONNECT 52\n");
    dev->service_host_sockets();
    auto req = guest.next();
    if (!req || req->hdr.op != kOpRequest) std::abort();
    host_port = req->hdr.src_port;
    guest.send(guest.hdr(kOpResponse, 52, host_port));
    std::string ok = read_some(host.get(), 64);
    if (ok.rfind("OK ", 0) != 0) std::abort();
    ::fcntl(host.get(), F_SETFL, O_NONBLOCK);
    if (run_loop) loop->start_thread();
  }
  ~Setup() {
    loop->stop();
    host.reset();
    dev.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  // The guest application consumed `n` bytes: tell the device now and then, as Linux does.
  void consumed(uint32_t n) {
    guest.fwd_cnt += n;
    unannounced += n;
    if (unannounced >= 64 * 1024) {
      guest.send(guest.hdr(kOpCreditUpdate, 52, host_port));
      unannounced = 0;
    }
  }

  std::string dir;
  std::unique_ptr<EventLoop> loop;
  GuestMemory mem = make_vsock_memory();
  FakeVsockGuest guest;
  std::shared_ptr<VirtioVsock> dev;
  UniqueFd host;
  uint32_t host_port = 0;
  uint32_t unannounced = 0;
};

void BM_VsockRoundTrip(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const bool run_loop = state.range(1) != 0;
  Setup s(4096 + kHeaderSize, run_loop);
  const std::string msg(bytes, 'r');
  std::string back(bytes, '\0');
  for (auto _ : state) {
    send_all(s.host.get(), msg);
    size_t got = 0;
    while (got < bytes) {
      if (!run_loop) s.dev->service_host_sockets();
      auto p = s.guest.next();
      if (!p) continue;
      got += p->payload.size();
      s.consumed(p->hdr.len);
      s.guest.send(s.guest.hdr(kOpRw, 52, s.host_port, p->hdr.len), p->payload);
    }
    size_t read = 0;
    while (read < bytes) {
      const ssize_t n = ::recv(s.host.get(), back.data() + read, bytes - read, 0);
      if (n > 0) read += static_cast<size_t>(n);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes * 2));
}
BENCHMARK(BM_VsockRoundTrip)
    ->ArgsProduct({{64, 4096}, {0, 1}})
    ->ArgNames({"bytes", "loop"})
    ->UseRealTime();

void BM_VsockHostToGuest(benchmark::State& state) {
  Setup s(static_cast<uint32_t>(state.range(0)), /*run_loop=*/false);
  const std::string chunk(256 * 1024, 'h');
  constexpr size_t kPerIteration = 4 << 20;
  for (auto _ : state) {
    size_t written = 0, received = 0;
    while (received < kPerIteration) {
      if (written < kPerIteration) {
        const ssize_t n = ::send(s.host.get(), chunk.data(),
                                 std::min(chunk.size(), kPerIteration - written), MSG_DONTWAIT);
        if (n > 0) written += static_cast<size_t>(n);
      }
      s.dev->service_host_sockets();
      s.guest.poll_rx();
      for (const Packet& p : s.guest.inbox) {
        received += p.payload.size();
        s.consumed(p.hdr.len);
      }
      s.guest.inbox.clear();
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPerIteration));
}
BENCHMARK(BM_VsockHostToGuest)->Arg(4096 + kHeaderSize)->Arg(65536 + kHeaderSize)->UseRealTime();

void BM_VsockGuestToHost(benchmark::State& state) {
  Setup s(4096 + kHeaderSize, /*run_loop=*/false);
  const std::vector<uint8_t> chunk(kMaxPayload, 'g');
  std::vector<char> sink(1 << 20);
  constexpr size_t kPerIteration = 4 << 20;
  uint32_t buf_alloc = VsockOptions{}.buf_alloc, dev_fwd = 0, sent = 0;
  for (auto _ : state) {
    size_t queued = 0, read = 0;
    while (read < kPerIteration) {
      const uint32_t credit = free_credit(buf_alloc, sent, dev_fwd);
      if (queued < kPerIteration && credit > 0) {
        const uint32_t n = std::min<uint32_t>(
            {credit, kMaxPayload, static_cast<uint32_t>(kPerIteration - queued)});
        s.guest.send(s.guest.hdr(kOpRw, 52, s.host_port, n), {chunk.data(), n});
        sent += n;
        queued += n;
      }
      const ssize_t r = ::recv(s.host.get(), sink.data(), sink.size(), MSG_DONTWAIT);
      if (r > 0) read += static_cast<size_t>(r);
      s.dev->service_host_sockets();  // flushes what the socket refused, announces credit
      s.guest.poll_rx();
      for (const Packet& p : s.guest.inbox) {
        buf_alloc = p.hdr.buf_alloc;
        dev_fwd = p.hdr.fwd_cnt;
      }
      s.guest.inbox.clear();
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kPerIteration));
}
BENCHMARK(BM_VsockGuestToHost)->UseRealTime();

}  // namespace
}  // namespace carapace::vsock::fake
