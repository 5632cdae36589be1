#include "egress/proxy/egress_proxy.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <system_error>

#include "common/base/log.h"

#include "egress/policy/address_class.h"
#include "egress/proxy/host_addresses.h"
#include "egress/proxy/proxy_connection.h"

namespace carapace::egress {
namespace {

// A worker with nothing to do for this long ends, unless it is the last one waiting.
constexpr std::chrono::milliseconds kWorkerIdleMs{30000};

constexpr char kOverCapacity[] =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n"
    "Content-Length: 47\r\n\r\ncarapace egress: too many connections, retry.\r\n";

}  // namespace

EgressProxy::EgressProxy(EgressProxyOptions options) : options_(std::move(options)) {}

Result<std::unique_ptr<EgressProxy>> EgressProxy::start(EgressProxyOptions options) {
  if (!options.resolve) options.resolve = resolve_with_system;
  if (!options.check) {
    auto host = TRY(HostAddresses::create(host_interface_addresses, kHostAddressesMaxAge));
    options.check = [host = std::move(host)](const EgressPolicy& p, const Destination& d,
                                             const IpAddress& a) {
      return check_address(p, d, a, *host->current());
    };
  }
  if (!options.log) {
    options.log = [](const std::string& line) { fprintf(stderr, "%s\n", line.c_str()); };
  }
  std::unique_ptr<EgressProxy> proxy(new EgressProxy(std::move(options)));
  proxy->policy_ = std::make_shared<const EgressPolicy>(proxy->options_.policy);
  // Moved out of the options: the secrets live in one place.
  proxy->credentials_ =
      std::make_shared<const ProxyCredentials>(std::move(proxy->options_.credentials));
  proxy->options_.credentials = ProxyCredentials{};
  if (auto tls = TlsClientContext::create(proxy->options_.ca_file); tls.ok()) {
    proxy->tls_ = std::move(*tls);
  } else {
    proxy->tls_error_ = tls.error().message;
  }
  if (auto ca = TlsAuthority::create(proxy->options_.sandbox); ca.ok()) {
    proxy->authority_ = std::move(*ca);
  } else {
    LOG_ERROR("egress proxy %s: no TLS termination: %s", proxy->options_.sandbox.c_str(),
              ca.error().message.c_str());
  }
  proxy->stop_.emplace(TRY(EventFd::create(EFD_NONBLOCK | EFD_CLOEXEC)));
  proxy->listener_ =
      TRY(http::listen_unix(proxy->options_.listen_path, 128, proxy->options_.listen_mode));
  {
    std::lock_guard lock(proxy->mu_);
    proxy->workers_ = proxy->idle_workers_ = 1;
  }
  proxy->acceptor_ = std::thread([p = proxy.get()] { p->work(true); });
  return proxy;
}

EgressProxy::~EgressProxy() {
  stop();
}

void EgressProxy::stop() {
  std::unique_lock lock(mu_);
  if (stopped_) return;
  stopped_ = true;
  opened_cv_.notify_all();
  // Every waiting worker sees it (each one's wait set holds it) and leaves; none takes a
  // connection from here on (take()).
  (void)stop_->write();
  // A connection still reading its head, or dialling, sees the shutdown; a tunnel the cut.
  for (const auto& c : open_) {
    (void)c->cut.write();
    ::shutdown(c->client.get(), SHUT_RDWR);
  }
  lock.unlock();
  if (acceptor_.joinable()) acceptor_.join();
  lock.lock();
  drained_.wait(lock, [this] { return workers_ == 0; });
  open_.clear();
  lock.unlock();
  http::unlink_unix_listener(listener_);
  listener_.fd.reset();
}

void EgressProxy::set_policy(EgressPolicy policy) {
  auto next = std::make_shared<const EgressPolicy>(std::move(policy));
  std::lock_guard lock(mu_);
  policy_ = next;
  for (const auto& c : open_) {
    std::lock_guard cl(c->mu);
    if (c->destination && !still_allowed(*next, options_.check, *c->destination, c->address))
      (void)c->cut.write();
  }
}

void EgressProxy::set_credentials(ProxyCredentials credentials) {
  auto next = std::make_shared<const ProxyCredentials>(std::move(credentials));
  std::lock_guard lock(mu_);
  credentials_ = std::move(next);
}

std::shared_ptr<const ProxyCredentials> EgressProxy::credentials() const {
  std::lock_guard lock(mu_);
  return credentials_;
}

EgressPolicy EgressProxy::policy() const {
  std::lock_guard lock(mu_);
  return *policy_;
}

EgressStats EgressProxy::stats() const {
  std::lock_guard lock(mu_);
  EgressStats s = stats_;
  s.active = open_.size();
  return s;
}

void EgressProxy::log_line(const std::string& line) {
  options_.log(line);
}

void EgressProxy::open_for_clients() {
  std::lock_guard lock(mu_);
  opened_ = true;
  opened_cv_.notify_all();
}

void EgressProxy::work(bool first) {
  if (first) {
    std::unique_lock lock(mu_);
    opened_cv_.wait(lock, [this] { return opened_ || stopped_ || !options_.start_closed; });
  }
  // This worker's own wait set: the listener with EPOLLEXCLUSIVE, so that a new connection wakes
  // one waiting worker rather than all of them, and the stop signal, which wakes every one.
  UniqueFd ep(::epoll_create1(EPOLL_CLOEXEC));
  auto watch = [&](int fd, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    return ::epoll_ctl(ep.get(), EPOLL_CTL_ADD, fd, &ev) == 0;
  };
  if (ep.valid() &&
      (!watch(listener_.fd.get(), EPOLLIN | EPOLLEXCLUSIVE) || !watch(stop_->fd(), EPOLLIN)))
    ep.reset();
  // Without one (no file descriptor to be had) it waits in poll(), woken with the others.
  auto wait = [&](int timeout_ms) {
    if (ep.valid()) {
      epoll_event evs[2];
      return ::epoll_wait(ep.get(), evs, 2, timeout_ms);
    }
    pollfd fds[2] = {{listener_.fd.get(), POLLIN, 0}, {stop_->fd(), POLLIN, 0}};
    return ::poll(fds, 2, timeout_ms);
  };
  const int idle_ms = first ? -1 : static_cast<int>(kWorkerIdleMs.count());
  for (;;) {
    const int n = wait(idle_ms);
    const int wait_errno = errno;
    std::unique_lock lock(mu_);
    if (stopped_) break;
    if (n < 0 && wait_errno != EINTR) {
      LOG_ERROR("egress proxy %s: wait: %s", options_.sandbox.c_str(), strerror(wait_errno));
      if (!first && idle_workers_ > 1) break;
      lock.unlock();
      ::poll(nullptr, 0, 50);
      continue;
    }
    // Idle for kWorkerIdle: this one ends, unless no other worker would be left waiting.
    if (n == 0 && idle_workers_ > 1) break;
    lock.unlock();
    if (n <= 0) continue;
    UniqueFd fd(::accept4(listener_.fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      // EAGAIN: another worker took it. EMFILE and friends: the connection stays queued; back
      // off instead of spinning.
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) ::poll(nullptr, 0, 50);
      continue;
    }
    std::shared_ptr<Connection> c = take(std::move(fd));
    if (!c) continue;
    serve(c);
    finish(c);
  }
  // Still under mu_. Detached workers touch nothing of the proxy once this is said.
  idle_workers_--;
  workers_--;
  drained_.notify_all();
}

std::shared_ptr<EgressProxy::Connection> EgressProxy::take(UniqueFd fd) {
  auto cut = EventFd::create(EFD_NONBLOCK | EFD_CLOEXEC);
  std::unique_lock lock(mu_);
  if (stopped_) return nullptr;
  stats_.connections++;
  auto refuse = [&] {
    stats_.over_capacity++;
    lock.unlock();
    (void)::send(fd.get(), kOverCapacity, sizeof kOverCapacity - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    return nullptr;
  };
  if (!cut.ok() || open_.size() >= options_.max_connections) return refuse();
  // This worker stops waiting to serve the connection. When it was the last one waiting, a new
  // worker starts waiting first (a thread start off this request's path: this one goes on at
  // once), so that the next connection, or its 503, does not wait for this one's end.
  if (idle_workers_ == 1) {
    try {
      std::thread([this] { work(false); }).detach();
      workers_++;
      idle_workers_++;
    } catch (const std::system_error&) {
      // No thread to be had (a pids limit): this one is refused like one over the cap, and this
      // worker stays the one waiting.
      return refuse();
    }
  }
  idle_workers_--;
  auto c = std::make_shared<Connection>(std::move(fd), std::move(*cut));
  open_.push_back(c);
  return c;
}

void EgressProxy::serve(const std::shared_ptr<Connection>& c) {
  try {
    handle(*c);
  } catch (const std::exception& e) {
    LOG_ERROR("egress proxy %s: connection failed: %s", options_.sandbox.c_str(), e.what());
  }
}

void EgressProxy::finish(const std::shared_ptr<Connection>& c) {
  std::lock_guard lock(mu_);
  std::erase(open_, c);
  idle_workers_++;  // waiting again
}

}  // namespace carapace::egress
