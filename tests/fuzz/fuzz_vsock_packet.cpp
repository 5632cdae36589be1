// Fuzzes virtio-vsock end to end: guest packets on the tx queue (headers and payloads of any
// shape), rx buffers of any size, host connections writing anything (CONNECT lines or not),
// host closes, deadlines, device and transport resets. A fresh device per input; after each
// input every socket and timerfd must be closed again (no fd leak) and LeakSanitizer checks memory.
//
// Input: [cfg:1][ops...], cfg % 4 picks the rx buffer size (44, 100, 4140, 65580 bytes) and
// cfg & 4 withholds rx buffers at activation. Each op is [kind:1] then, by kind % 8:
//   0 tx packet:   [fix:1][hdr:44][plen:2][payload bytes]; fix bits make fields valid:
//                  1 src_cid, 2 dst_cid, 4 type, 8 op %= 8, 16 len = plen, 32 ports from a
//                  small set (dst 5000 = a host listener, or the first host-initiated ports),
//                  64 header and payload in one descriptor
//   1 rx buffers:  [count:1] publish up to count buffers
//   2 host connect: [len:1][bytes] a new connection to the device's socket writing bytes
//   3 host write:  [idx:1][len:1][bytes] on host socket idx (connected or accepted)
//   4 host close:  [idx:1][how:1] how % 3: close, shutdown(WR), shutdown(RD)
//   5 service host sockets (what the event loop does)
//   6 fire every deadline
//   7 kind / 8 % 4: 0 device reset + re-activate, 1 transport reset, 2 refill event buffers,
//                   3 collect rx
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_memory.h"
#include "tests/unit/devices/vsock/fake_vsock_guest.h"
#include "tests/unit/devices/vsock/host_sockets.h"

using namespace carapace;
using namespace carapace::vsock;
using namespace carapace::vsock::fake;

namespace {

constexpr uint64_t kCid = 3;
constexpr uint32_t kListenPort = 5000;

struct World {
  std::string dir, path;
  std::unique_ptr<EventLoop> loop;
  GuestMemory mem;
  UniqueFd listener;  // <path>_5000, for guest-initiated connections
};

World& world() {
  static World* w = [] {
    set_log_level(LogLevel::kError);
    auto* w = new World;
    char tmpl[] = "/tmp/fuzz-vsock-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) std::abort();
    w->dir = tmpl;
    w->path = w->dir + "/v.sock";
    w->loop = std::move(EventLoop::create()).value();
    w->mem = make_vsock_memory();
    w->listener = unix_listen(w->path + "_" + std::to_string(kListenPort), 4096);
    ::fcntl(w->listener.get(), F_SETFL, O_NONBLOCK);
    return w;
  }();
  return *w;
}

const uint32_t kRxSizes[] = {44, 100, 4096 + 44, 65536 + 44};

void skip(fuzz::Input& in, size_t n) {
  in = fuzz::Input(in.data() + n, in.size() - n);
}

void accept_all(World& w, std::vector<UniqueFd>& host) {
  for (;;) {
    int fd = ::accept4(w.listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    host.emplace_back(fd);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  World& w = world();
  static const size_t baseline = count_socket_fds();
  fuzz::Input in(data, size);
  const uint8_t cfg = in.take<uint8_t>();
  {
    VsockOptions opts;
    opts.max_connections = 8;  // reachable by a fuzzer
    opts.max_pending_rst = 4;
    opts.buf_alloc = 8192;
    auto dev = VirtioVsock::create(kCid, w.path, *w.loop, opts);
    if (!dev.ok()) std::abort();
    FakeVsockGuest guest(w.mem, kCid, kRxSizes[cfg % 4]);
    guest.buf_alloc = 4096;
    (void)guest.activate(**dev, (cfg & 4) == 0);
    std::vector<UniqueFd> host;
    std::vector<uint8_t> payload;

    for (int n = 0; n < 256 && !in.empty(); ++n) {
      const uint8_t kind = in.take<uint8_t>();
      switch (kind % 8) {
        case 0: {
          const uint8_t fix = in.take<uint8_t>();
          Header h = in.take<Header>();
          const uint16_t plen = in.take<uint16_t>();  // up to 64 KiB - 1
          payload.assign(plen, 0);
          const size_t avail = std::min<size_t>(plen, in.size());
          if (avail > 0) std::memcpy(payload.data(), in.data(), avail);
          skip(in, avail);
          if (fix & 1) h.src_cid = kCid;
          if (fix & 2) h.dst_cid = kHostCid;
          if (fix & 4) h.type = kTypeStream;
          if (fix & 8) h.op %= 8;
          if (fix & 16) h.len = plen;
          if (fix & 32) {
            h.src_port = 1000 + h.src_port % 4;
            h.dst_port = (h.dst_port & 1) ? kListenPort
                                          : VirtioVsock::kFirstLocalPort + (h.dst_port >> 1) % 4;
          }
          if (fix & 64)
            (void)guest.send_contiguous(h, payload);
          else
            (void)guest.send(h, payload);
          break;
        }
        case 1:
          guest.give_rx_buffers(in.take<uint8_t>());
          break;
        case 2: {
          const uint8_t len = in.take<uint8_t>();
          UniqueFd fd = unix_connect(w.path);
          if (fd.valid()) {
            const size_t avail = std::min<size_t>(len, in.size());
            send_all(fd.get(), std::string_view(reinterpret_cast<const char*>(in.data()), avail));
            skip(in, avail);
            ::fcntl(fd.get(), F_SETFL, O_NONBLOCK);
            host.push_back(std::move(fd));
          }
          break;
        }
        case 3: {
          const uint8_t idx = in.take<uint8_t>();
          const uint8_t len = in.take<uint8_t>();
          const size_t avail = std::min<size_t>(len, in.size());
          if (!host.empty())
            (void)::send(host[idx % host.size()].get(), in.data(), avail,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
          skip(in, avail);
          break;
        }
        case 4: {
          const uint8_t idx = in.take<uint8_t>();
          const uint8_t how = in.take<uint8_t>() % 3;
          if (host.empty()) break;
          UniqueFd& fd = host[idx % host.size()];
          if (how == 0)
            fd.reset();
          else
            (void)::shutdown(fd.get(), how == 1 ? SHUT_WR : SHUT_RD);
          break;
        }
        case 5:
          (*dev)->service_host_sockets();
          accept_all(w, host);
          break;
        case 6:
          (*dev)->expire_deadlines(VirtioVsock::now_ns() + 1000ull * 1000000000);
          break;
        case 7:
          switch (kind / 8 % 4) {
            case 0:
              (*dev)->reset();
              (void)guest.activate(**dev);
              break;
            case 1:
              (*dev)->send_transport_reset();
              break;
            case 2:
              guest.refill_events();
              break;
            case 3:
              guest.poll_rx();
              guest.inbox.clear();
              break;
          }
          break;
      }
      // Packets the device gave the guest are only counted; the bytes were checked on the way.
      if (guest.inbox.size() > 64) guest.inbox.clear();
    }
    (void)(*dev)->stats();
    (*dev)->reset();
    accept_all(w, host);
  }
  // Everything above is gone: the device, its sockets, the host ends.
  if (count_socket_fds() != baseline) __builtin_trap();
  return 0;
}
