#include "guest/agent/egress_forwarder.h"

#include <fcntl.h>
#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>

#include "common/base/byte_relay.h"
#include "common/base/flag_values.h"

namespace carapace::agent {
namespace {

// A tunnel nothing crossed for this long is closed here too (the host proxy has its own).
constexpr std::chrono::milliseconds kIdle{600'000};

Error bad_upstream(const std::string& why) {
  return as_invalid_input(make_error("egress upstream: " + why));
}

}  // namespace

Result<ForwarderUpstream> parse_forwarder_upstream(std::string_view text) {
  ForwarderUpstream u;
  u.text = std::string(text);
  if (text.starts_with("unix:")) {
    u.kind = ForwarderUpstream::Kind::kUnix;
    u.path = std::string(text.substr(5));
    if (u.path.empty() || u.path[0] != '/') return bad_upstream("unix: needs an absolute path");
    if (u.path.size() >= sizeof(sockaddr_un{}.sun_path)) return bad_upstream("path too long");
    if (u.path.find('\0') != std::string::npos) return bad_upstream("NUL in the path");
    return u;
  }
  if (text.starts_with("vsock:")) {
    u.kind = ForwarderUpstream::Kind::kVsock;
    auto port = decimal_u64(text.substr(6));
    if (!port || *port == 0 || *port >= VMADDR_PORT_ANY)
      return bad_upstream("vsock: needs a port 1-4294967294");
    u.port = static_cast<uint32_t>(*port);
    return u;
  }
  return bad_upstream("expected unix:PATH or vsock:PORT");
}

std::vector<std::string> proxy_env(uint16_t port) {
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  std::vector<std::string> env;
  for (const char* name :
       {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"})
    env.push_back(std::string(name) + "=" + url);
  env.emplace_back("NO_PROXY=localhost,127.0.0.1,::1");
  env.emplace_back("no_proxy=localhost,127.0.0.1,::1");
  return env;
}

EgressForwarder::EgressForwarder(UniqueFd listener, uint16_t port, ForwarderUpstream upstream,
                                 EventFd stop)
    : listener_(std::move(listener)),
      port_(port),
      upstream_(std::move(upstream)),
      stop_(std::move(stop)) {}

Result<std::unique_ptr<EgressForwarder>> EgressForwarder::start(uint16_t port,
                                                                ForwarderUpstream upstream) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error("egress forwarder: socket");
  int one = 1;
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return sys_error("egress forwarder: bind 127.0.0.1:" + std::to_string(port));
  if (::listen(fd.get(), 128) != 0) return sys_error("egress forwarder: listen");
  socklen_t len = sizeof a;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return sys_error("egress forwarder: getsockname");
  auto stop = TRY(EventFd::create(EFD_NONBLOCK | EFD_CLOEXEC));
  std::unique_ptr<EgressForwarder> f(
      new EgressForwarder(std::move(fd), ntohs(a.sin_port), std::move(upstream), std::move(stop)));
  f->acceptor_ = std::thread([p = f.get()] { p->accept_loop(); });
  return f;
}

EgressForwarder::~EgressForwarder() {
  (void)stop_.write();
  if (acceptor_.joinable()) acceptor_.join();
  std::unique_lock lock(mu_);
  idle_.wait(lock, [this] { return active_ == 0; });
}

Result<UniqueFd> EgressForwarder::connect_upstream() const {
  if (upstream_.kind == ForwarderUpstream::Kind::kVsock) {
    UniqueFd fd(::socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return sys_error("egress forwarder: vsock socket");
    sockaddr_vm a{};
    a.svm_family = AF_VSOCK;
    a.svm_cid = VMADDR_CID_HOST;
    a.svm_port = upstream_.port;
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      return sys_error("egress forwarder: connect " + upstream_.text);
    return fd;
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error("egress forwarder: socket");
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, upstream_.path.c_str(), upstream_.path.size() + 1);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return sys_error("egress forwarder: connect " + upstream_.text);
  return fd;
}

void EgressForwarder::accept_loop() {
  for (;;) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {stop_.fd(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents & POLLIN) return;
    {
      // At the cap, connections wait in the backlog until one ends.
      std::unique_lock lock(mu_);
      if (active_ >= kMaxConnections) {
        idle_.wait_for(lock, std::chrono::milliseconds(100));
        continue;
      }
    }
    UniqueFd c(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!c.valid()) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) ::poll(nullptr, 0, 50);
      continue;
    }
    std::lock_guard lock(mu_);
    try {
      // Detached: the destructor waits for active_ to reach 0, and a relay touches nothing of
      // the forwarder after it said so.
      std::thread([this, fd = std::move(c)]() mutable { relay(std::move(fd)); }).detach();
      active_++;
    } catch (const std::system_error&) {
      // No thread to be had: the connection closes (the client sees a reset and may retry).
    }
  }
}

void EgressForwarder::relay(UniqueFd client) {
  auto upstream = connect_upstream();
  if (upstream.ok()) {
    const int flags = ::fcntl(upstream->get(), F_GETFL);
    (void)::fcntl(upstream->get(), F_SETFL, flags | O_NONBLOCK);
    RelayBytes bytes;
    (void)run_relay(client.get(), upstream->get(), stop_.fd(), kIdle, false, bytes);
  }
  client.reset();
  std::lock_guard lock(mu_);
  active_--;
  idle_.notify_all();
}

}  // namespace carapace::agent
