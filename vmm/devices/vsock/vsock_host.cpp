// virtio-vsock: the host side. The listening socket at uds_path takes host-initiated connections
// ("CONNECT <port>\n"); a guest REQUEST to host port P connects to `<uds_path>_<P>`. Every host
// socket is non-blocking and watched edge-triggered; its handler finds the connection by id
// under the device lock, so a late or spurious event is harmless.
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/base/log.h"
#include "vmm/devices/vsock/vsock_device.h"

namespace carapace {

using vsock::Connection;
using State = vsock::Connection::State;

Status VirtioVsock::watch_locked(Connection& c) {
  std::weak_ptr<VirtioVsock> weak = weak_from_this();
  const uint64_t id = c.id;
  return loop_.add(c.fd.get(), EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                   [weak, id](uint32_t events) {
                     if (auto self = weak.lock()) self->on_connection_event(id, events);
                   });
}

void VirtioVsock::unwatch_locked(Connection& c) {
  if (c.fd.valid()) (void)loop_.remove(c.fd.get());
}

void VirtioVsock::on_listener() {
  std::lock_guard<std::mutex> lock(mu_);
  accept_all_locked();
  pump_locked();
}

void VirtioVsock::accept_all_locked() {
  for (;;) {
    const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        LOG_WARN("virtio-vsock: accept on %s: %s", uds_path_.c_str(), std::strerror(errno));
      return;  // edge-triggered: the next connection wakes us again
    }
    UniqueFd sock(fd);
    // docs/security.md #18: past the cap the connection is closed at once (the host process
    // sees EOF instead of an "OK").
    if (conns_.size() >= opts_.max_connections) {
      ++stats_.refused_by_cap;
      continue;
    }
    auto owned = std::make_unique<Connection>();
    owned->host_initiated = true;
    owned->state = State::kReadingConnect;
    owned->fd = std::move(sock);
    Connection& c = insert_locked(std::move(owned));
    if (auto s = watch_locked(c); !s.ok()) {
      LOG_WARN("virtio-vsock: %s", s.error().describe().c_str());
      erase_locked(c);
      continue;
    }
    // One deadline for the whole handshake: the line, the driver, the guest's answer.
    set_deadline_locked(c, opts_.connect_timeout_ns);
    c.host_readable = true;  // the line may already be there
    read_connect_line_locked(c);
  }
}

void VirtioVsock::read_connect_line_locked(Connection& c) {
  // Peek, then consume exactly the line: bytes after the '\n' are the stream's first bytes
  // and stay in the socket for the guest.
  char buf[vsock::kMaxConnectLine];
  ssize_t n;
  do {
    n = ::recv(c.fd.get(), buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    c.host_readable = false;
    return;
  }
  if (n <= 0) {  // closed (or failed) before the line
    kill_locked(c, /*rst=*/false);
    return;
  }
  const void* nl = std::memchr(buf, '\n', static_cast<size_t>(n));
  if (nl == nullptr) {
    // Too long, or the host stopped sending before the newline (the peeked bytes stay in the
    // socket, so ask it whether the writer is gone).
    pollfd p{c.fd.get(), POLLRDHUP, 0};
    const bool writer_gone =
        ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
    if (static_cast<size_t>(n) >= sizeof buf || writer_gone) {
      LOG_DEBUG("virtio-vsock: handshake line too long or unfinished");
      kill_locked(c, /*rst=*/false);
    }
    return;  // wait for the rest of the line
  }
  const size_t line_len = static_cast<size_t>(static_cast<const char*>(nl) - buf);
  ssize_t took;
  do {
    took = ::recv(c.fd.get(), buf, line_len + 1, MSG_DONTWAIT);
  } while (took < 0 && errno == EINTR);
  const auto port = vsock::parse_connect_line(std::string_view(buf, line_len));
  if (took != static_cast<ssize_t>(line_len + 1) || !port) {
    LOG_DEBUG("virtio-vsock: malformed handshake line '%.*s'", static_cast<int>(line_len), buf);
    kill_locked(c, /*rst=*/false);
    return;
  }
  c.peer_port = *port;
  c.local_port = allocate_local_port_locked(*port);
  c.state = State::kAwaitingResponse;
  c.send_request = true;  // sent when the driver is up and gives an rx buffer
  index_ports_locked(c);
  schedule_rx_locked(c);
}

uint32_t VirtioVsock::allocate_local_port_locked(uint32_t peer_port) {
  // At most conns_.size() ports can be taken with this peer port, so this ends.
  for (;;) {
    const uint32_t port = next_local_port_;
    // Wrap before UINT32_MAX (VMADDR_PORT_ANY).
    next_local_port_ = port + 1 == UINT32_MAX ? kFirstLocalPort : port + 1;
    if (by_ports_.count(vsock::port_key(port, peer_port)) == 0) return port;
  }
}

void VirtioVsock::connect_guest_request_locked(const Header& h) {
  const std::string path = uds_path_ + "_" + std::to_string(h.dst_port);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    refuse_locked(h);
    return;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    LOG_WARN("virtio-vsock: socket: %s", std::strerror(errno));
    refuse_locked(h);
    return;
  }
  // A Unix stream connect completes at once or fails (EAGAIN: the listener's backlog is full).
  int rc;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    LOG_DEBUG("virtio-vsock: guest port %u -> host port %u: %s: %s", h.src_port, h.dst_port,
              path.c_str(), std::strerror(errno));
    refuse_locked(h);
    return;
  }
  auto owned = std::make_unique<Connection>();
  owned->state = State::kEstablished;
  owned->fd = std::move(fd);
  owned->local_port = h.dst_port;
  owned->peer_port = h.src_port;
  owned->peer_buf_alloc = h.buf_alloc;
  owned->peer_fwd_cnt = h.fwd_cnt;
  owned->send_response = true;
  owned->host_readable = true;  // a read tells; the host may have written already
  Connection& c = insert_locked(std::move(owned));
  index_ports_locked(c);
  if (auto s = watch_locked(c); !s.ok()) {
    LOG_WARN("virtio-vsock: %s", s.error().describe().c_str());
    c.send_response = false;
    kill_locked(c, /*rst=*/true);
    return;
  }
  schedule_rx_locked(c);
}

void VirtioVsock::on_connection_event(uint64_t id, uint32_t events) {
  std::lock_guard<std::mutex> lock(mu_);
  Connection* c = find_locked(id);
  if (c == nullptr) return;  // closed meanwhile
  service_connection_locked(*c, events);
  pump_locked();
}

void VirtioVsock::service_host_sockets() {
  std::lock_guard<std::mutex> lock(mu_);
  accept_all_locked();
  std::vector<uint64_t> ids;
  ids.reserve(conns_.size());
  for (const auto& [id, c] : conns_)
    ids.push_back(id);
  for (uint64_t id : ids)
    if (Connection* c = find_locked(id); c != nullptr && c->fd.valid())
      service_connection_locked(*c, EPOLLIN | EPOLLOUT);
  pump_locked();
}

void VirtioVsock::service_connection_locked(Connection& c, uint32_t events) {
  if (events & EPOLLHUP) c.host_hup = true;
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) c.host_readable = true;
  if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) c.host_writable = true;
  switch (c.state) {
    case State::kReadingConnect:
      if (c.host_readable) read_connect_line_locked(c);
      return;
    case State::kAwaitingResponse:
      // The host process left before the guest answered.
      if (c.host_hup) kill_locked(c, /*rst=*/true);
      return;
    case State::kClosing:
      return;
    case State::kDraining:
      if (c.host_writable && vsock::flush_to_host(c) != vsock::Io::kBlocked) {
        // All written (the reader gets EOF next), or the host side is gone.
        erase_locked(c);
      }
      return;
    case State::kEstablished:
      break;
  }
  if (c.host_writable && (!c.prefix.empty() || !c.out.empty())) {
    if (vsock::flush_to_host(c) == vsock::Io::kClosed) {
      kill_locked(c, /*rst=*/true);
      return;
    }
    after_guest_data_locked(c);  // may end the connection (shutdown completed)
    if (c.state != State::kEstablished) return;
  }
  if (connection_has_rx_work(c)) schedule_rx_locked(c);
}

}  // namespace carapace
