#include "egress/proxy/egress_proxy.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <system_error>

#include "common/base/log.h"

#include "egress/policy/address_class.h"
#include "egress/proxy/proxy_connection.h"

namespace carapace::egress {
namespace {

// A worker with nothing to do for this long ends; the next connection starts a new one.
constexpr std::chrono::seconds kWorkerIdle{30};

constexpr char kOverCapacity[] =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n"
    "Content-Length: 47\r\n\r\ncarapace egress: too many connections, retry.\r\n";

}  // namespace

EgressProxy::EgressProxy(EgressProxyOptions options) : options_(std::move(options)) {}

Result<std::unique_ptr<EgressProxy>> EgressProxy::start(EgressProxyOptions options) {
  if (!options.resolve) options.resolve = resolve_with_system;
  if (!options.check) {
    auto host = TRY(host_interface_addresses());
    options.check = [host = std::move(host)](const EgressPolicy& p, const Destination& d,
                                             const IpAddress& a) {
      return check_address(p, d, a, host);
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
  proxy->stop_.emplace(TRY(EventFd::create(EFD_NONBLOCK | EFD_CLOEXEC)));
  proxy->listener_ =
      TRY(http::listen_unix(proxy->options_.listen_path, 128, proxy->options_.listen_mode));
  proxy->acceptor_ = std::thread([p = proxy.get()] { p->accept_loop(); });
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
  (void)stop_->write();
  lock.unlock();
  if (acceptor_.joinable()) acceptor_.join();
  lock.lock();
  // A connection still reading its head, or dialling, sees the shutdown; a tunnel the cut.
  for (const auto& c : open_) {
    (void)c->cut.write();
    ::shutdown(c->client.get(), SHUT_RDWR);
  }
  work_.notify_all();
  drained_.wait(lock, [this] { return workers_ == 0; });
  queue_.clear();
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

void EgressProxy::accept_loop() {
  {
    std::unique_lock lock(mu_);
    opened_cv_.wait(lock, [this] { return opened_ || stopped_ || !options_.start_closed; });
  }
  for (;;) {
    pollfd fds[2] = {{listener_.fd.get(), POLLIN, 0}, {stop_->fd(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      LOG_ERROR("egress proxy %s: poll: %s", options_.sandbox.c_str(), strerror(errno));
      return;
    }
    if (fds[1].revents & POLLIN) return;
    if (!(fds[0].revents & POLLIN)) continue;
    UniqueFd fd(::accept4(listener_.fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      // EMFILE and friends: the connection stays queued; back off instead of spinning.
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) ::poll(nullptr, 0, 50);
      continue;
    }
    auto cut = EventFd::create(EFD_NONBLOCK | EFD_CLOEXEC);
    std::unique_lock lock(mu_);
    stats_.connections++;
    if (!cut.ok() || open_.size() >= options_.max_connections) {
      stats_.over_capacity++;
      lock.unlock();
      (void)::send(fd.get(), kOverCapacity, sizeof kOverCapacity - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
      continue;
    }
    auto c = std::make_shared<Connection>(std::move(fd), std::move(*cut));
    open_.push_back(c);
    queue_.push_back(c);
    // An idle worker takes it (a wake-up, not a thread start on the request's path); a new
    // worker only when none is idle.
    if (idle_workers_ >= queue_.size()) {
      work_.notify_one();
    } else {
      // Detached: stop() waits until every worker has left, and a worker touches nothing of
      // the proxy after it said so.
      try {
        std::thread([this] { work(); }).detach();
        workers_++;
      } catch (const std::system_error&) {
        // No thread to be had (a pids limit): this one is refused like one over the cap.
        queue_.pop_back();
        open_.pop_back();
        stats_.over_capacity++;
        lock.unlock();
        (void)::send(c->client.get(), kOverCapacity, sizeof kOverCapacity - 1,
                     MSG_DONTWAIT | MSG_NOSIGNAL);
      }
    }
  }
}

void EgressProxy::work() {
  std::unique_lock lock(mu_);
  for (;;) {
    idle_workers_++;
    bool woken = work_.wait_for(lock, kWorkerIdle, [this] { return !queue_.empty() || stopped_; });
    idle_workers_--;
    if (queue_.empty()) {
      if (stopped_ || !woken) break;  // stopping, or idle for kWorkerIdle
      continue;
    }
    std::shared_ptr<Connection> c = std::move(queue_.front());
    queue_.pop_front();
    const bool stopping = stopped_;
    lock.unlock();
    if (!stopping) serve(c);
    finish(c);
    c.reset();
    lock.lock();
  }
  workers_--;
  drained_.notify_all();
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
}

}  // namespace carapace::egress
