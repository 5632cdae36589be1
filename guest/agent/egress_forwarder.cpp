#include "guest/agent/egress_forwarder.h"

#include <fcntl.h>
#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
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

EgressForwarder::EgressForwarder(ForwarderUpstream upstream, TransparentEgress transparent,
                                 EventFd stop)
    : upstream_(std::move(upstream)),
      transparent_(std::move(transparent)),
      stop_(std::move(stop)) {}

Result<UniqueFd> bind_tcp_listener(uint32_t address, uint16_t port, uint16_t* bound_port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error("egress forwarder: socket");
  int one = 1;
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(address);
  a.sin_port = htons(port);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return sys_error("egress forwarder: bind " + ipv4_text(address) + ":" + std::to_string(port));
  if (::listen(fd.get(), 128) != 0) return sys_error("egress forwarder: listen");
  if (bound_port) {
    socklen_t len = sizeof a;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return sys_error("egress forwarder: getsockname");
    *bound_port = ntohs(a.sin_port);
  }
  return fd;
}

Status EgressForwarder::watch(int fd, uint64_t tag) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = tag;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0)
    return sys_error("egress forwarder: epoll_ctl");
  return ok_status();
}

Status EgressForwarder::open_listeners(uint16_t port) {
  epoll_ = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) return sys_error("egress forwarder: epoll_create1");
  TRY_STATUS(watch(stop_.fd(), kStopTag));
  UniqueFd proxy = TRY(bind_tcp_listener(INADDR_LOOPBACK, port, &port_));
  TRY_STATUS(watch(proxy.get(), 0));
  listeners_.push_back(Listener{std::move(proxy), ""});
  if (transparent_.ports.empty()) return ok_status();
  TRY_STATUS(open_stub_resolver());
  // Stand-ins a previous forwarder handed out keep their ports.
  for (const auto& [name, address] : transparent_.names->entries())
    capture(name, address);
  return ok_status();
}

Result<std::unique_ptr<EgressForwarder>> EgressForwarder::start(uint16_t port,
                                                                ForwarderUpstream upstream,
                                                                TransparentEgress transparent) {
  if (transparent.ports.size() > TransparentEgress::kMaxPorts)
    return as_invalid_input(make_error("egress forwarder: at most " +
                                       std::to_string(TransparentEgress::kMaxPorts) +
                                       " transparent ports"));
  if (!transparent.names) transparent.names = std::make_shared<FakeAddressTable>();
  auto stop = TRY(EventFd::create(EFD_NONBLOCK | EFD_CLOEXEC));
  std::unique_ptr<EgressForwarder> f(
      new EgressForwarder(std::move(upstream), std::move(transparent), std::move(stop)));
  TRY_STATUS(f->open_listeners(port));
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
  epoll_event events[32];
  for (;;) {
    const int n = ::epoll_wait(epoll_.get(), events, 32, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kStopTag) return;
      if (tag == kDnsTag)
        answer_dns();
      else if (tag < listeners_.size())
        accept_from(listeners_[tag]);
    }
  }
}

void EgressForwarder::accept_from(const Listener& l) {
  {
    // At the cap, connections wait in the backlog until one ends.
    std::unique_lock lock(mu_);
    if (active_ >= kMaxConnections) {
      idle_.wait_for(lock, std::chrono::milliseconds(100));
      return;
    }
  }
  UniqueFd c(::accept4(l.fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  if (!c.valid()) {
    if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) ::poll(nullptr, 0, 50);
    return;
  }
  std::lock_guard lock(mu_);
  try {
    // Detached: the destructor waits for active_ to reach 0, and a relay touches nothing of
    // the forwarder after it said so.
    std::thread([this, fd = std::move(c), target = l.connect_target]() mutable {
      relay(std::move(fd), std::move(target));
    }).detach();
    active_++;
  } catch (const std::system_error&) {
    // No thread to be had: the connection closes (the client sees a reset and may retry).
  }
}

void EgressForwarder::relay(UniqueFd client, std::string connect_target) {
  auto upstream = connect_upstream();
  if (upstream.ok() && !connect_target.empty()) {
    if (!open_tunnel(client.get(), upstream->get(), connect_target)) upstream = sys_error("tunnel");
  }
  if (upstream.ok()) {
    const int flags = ::fcntl(upstream->get(), F_GETFL);
    (void)::fcntl(upstream->get(), F_SETFL, flags | O_NONBLOCK);
    RelayBytes bytes;
    (void)run_relay(client.get(), upstream->get(), stop_.fd(), kIdle, false, bytes);
  } else if (!connect_target.empty()) {
    // Refused or unreachable: a reset, as a closed port would give, not an orderly EOF that
    // reads as an empty answer.
    linger l{1, 0};
    (void)::setsockopt(client.get(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
  }
  client.reset();
  std::lock_guard lock(mu_);
  active_--;
  idle_.notify_all();
}

}  // namespace carapace::agent
