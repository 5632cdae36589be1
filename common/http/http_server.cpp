#include "common/http/http_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <system_error>
#include <vector>

#include "common/base/log.h"
#include "common/http/json_util.h"

namespace carapace::http {
namespace {

constexpr int kBacklog = 128;
// Connections accepted per listener per wakeup, so one busy listener cannot starve the other.
constexpr int kAcceptBurst = 32;
// Out of fds: poll() would report the listener readable again at once; back off instead.
constexpr int kFdExhaustedBackoffMs = 50;

}  // namespace

struct HttpServer::Connection {
  UniqueFd fd;  // closed by the reaper after the thread is joined, never by the thread
  std::thread thread;
  bool done = false;  // guarded by mu_
};

HttpServer::HttpServer(HttpServerOptions options, Router router, EventFd wake, EventFd stop_event)
    : options_(std::move(options)),
      router_(std::move(router)),
      wake_(std::move(wake)),
      stop_event_(std::move(stop_event)),
      body_budget_(options_.max_total_body_bytes) {
  context_.options = &options_;
  context_.router = &router_;
  context_.stop_fd = stop_event_.fd();
  context_.stopping = &stopping_;
  context_.aborting = &aborting_;
  context_.body_budget = &body_budget_;
  context_.requests = &requests_;
  context_.rejected = &rejected_;
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(HttpServerOptions options, Router router) {
  if (options.unix_path.empty() && !options.tcp_port)
    return as_invalid_input(make_error("http server: no Unix socket path and no TCP port"));
  if (options.max_connections == 0)
    return as_invalid_input(make_error("http server: max_connections must be at least 1"));
  EventFd wake = TRY(EventFd::create(EFD_NONBLOCK | EFD_CLOEXEC));
  EventFd stop_event = TRY(EventFd::create(EFD_NONBLOCK | EFD_CLOEXEC));
  std::unique_ptr<HttpServer> s(new HttpServer(std::move(options), std::move(router),
                                               std::move(wake), std::move(stop_event)));
  if (!s->options_.unix_path.empty())
    s->unix_listener_ = TRY(listen_unix(s->options_.unix_path, kBacklog));
  if (s->options_.tcp_port) {
    s->tcp_listener_ = TRY(listen_tcp_loopback(*s->options_.tcp_port, kBacklog));
    s->tcp_port_ = TRY(local_port(s->tcp_listener_.get()));
  }
  try {
    s->acceptor_ = std::thread([srv = s.get()] { srv->accept_loop(); });
  } catch (const std::system_error& e) {
    if (s->unix_listener_) unlink_unix_listener(*s->unix_listener_);
    return make_error(std::string("http server: cannot start acceptor thread: ") + e.what());
  }
  return s;
}

HttpServer::~HttpServer() {
  stop();
}

HttpServerStats HttpServer::stats() const {
  std::lock_guard lock(mu_);
  HttpServerStats s;
  s.accepted = accepted_;
  s.refused_busy = refused_busy_;
  s.requests = requests_.load();
  s.rejected = rejected_.load();
  for (const auto& c : connections_)
    s.open_connections += c->done ? 0 : 1;
  return s;
}

void HttpServer::accept_loop() {
  while (!stopping_.load()) {
    std::vector<pollfd> fds;
    fds.push_back({wake_.fd(), POLLIN, 0});
    if (unix_listener_) fds.push_back({unix_listener_->fd.get(), POLLIN, 0});
    if (tcp_listener_.valid()) fds.push_back({tcp_listener_.get(), POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      LOG_ERROR("http: poll: errno %d; the API stops accepting connections", errno);
      return;
    }
    if (fds[0].revents & POLLIN) (void)wake_.read();
    reap_finished();
    if (stopping_.load()) break;
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      bool tcp = tcp_listener_.valid() && fds[i].fd == tcp_listener_.get();
      accept_from(fds[i].fd, tcp ? Transport::kTcp : Transport::kUnix);
    }
  }
}

void HttpServer::accept_from(int listen_fd, Transport transport) {
  for (int i = 0; i < kAcceptBurst; ++i) {
    UniqueFd fd(::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Logged once per episode: this repeats every backoff until an fd frees up.
        if (!out_of_fds_)
          LOG_WARN("http: accept: out of file descriptors or memory (errno %d)", errno);
        out_of_fds_ = true;
        ::poll(nullptr, 0, kFdExhaustedBackoffMs);
      }
      return;  // EAGAIN (drained), or a connection that died in the backlog
    }
    out_of_fds_ = false;
    if (transport == Transport::kTcp) {
      // Streamed output (SSE, exec) should leave as it is written, not wait for Nagle.
      int one = 1;
      ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    std::lock_guard lock(mu_);
    size_t open = 0;
    for (const auto& c : connections_)
      open += c->done ? 0 : 1;
    if (open >= options_.max_connections) {
      refuse_busy(fd.get());
      continue;
    }
    auto conn = std::make_unique<Connection>();
    conn->fd = std::move(fd);
    Connection* c = conn.get();
    try {
      c->thread = std::thread([this, c, transport] {
        serve_connection(c->fd.get(), transport, context_);
        connection_done(c);
      });
    } catch (const std::system_error&) {
      refuse_busy(c->fd.get());  // out of threads: as good as full
      continue;
    }
    ++accepted_;
    connections_.push_back(std::move(conn));
  }
}

void HttpServer::refuse_busy(int fd) {
  ++refused_busy_;
  // Best effort and never blocking: the acceptor must not wait on a client it is turning away.
  HttpResponse r = error_response(503, "too many connections");
  std::string text =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
      "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
      std::to_string(r.body.size()) + "\r\n\r\n" + r.body;
  (void)::send(fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
}

void HttpServer::connection_done(Connection* c) {
  {
    std::lock_guard lock(mu_);
    c->done = true;
  }
  idle_cv_.notify_all();
  (void)wake_.write();
}

void HttpServer::reap_finished() {
  std::list<std::unique_ptr<Connection>> finished;
  {
    std::lock_guard lock(mu_);
    for (auto it = connections_.begin(); it != connections_.end();) {
      auto next = std::next(it);
      if ((*it)->done) finished.splice(finished.end(), connections_, it);
      it = next;
    }
  }
  // Joined outside the lock (the threads take it to finish); the fds close as the list dies.
  for (auto& c : finished)
    c->thread.join();
}

void HttpServer::stop() {
  std::call_once(stop_once_, [this] {
    stopping_.store(true);
    (void)stop_event_.write();
    (void)wake_.write();
    if (acceptor_.joinable()) acceptor_.join();
    // No new connections from here on: close the listeners first.
    if (unix_listener_) {
      unlink_unix_listener(*unix_listener_);
      unix_listener_.reset();
    }
    tcp_listener_.reset();

    // Idle connections have seen stop_event_ and are closing; in-flight requests get until the
    // drain deadline.
    std::unique_lock lock(mu_);
    auto all_done = [this] {
      for (const auto& c : connections_) {
        if (!c->done) return false;
      }
      return true;
    };
    if (!idle_cv_.wait_for(lock, options_.drain_timeout, all_done)) {
      // Cut the rest: a blocked read or write fails at once, and every later write fails on the
      // aborting flag. The fds stay open (owned here) until their threads are joined, so no
      // shutdown() can ever reach a reused fd number.
      aborting_.store(true);
      for (const auto& c : connections_) {
        if (!c->done) ::shutdown(c->fd.get(), SHUT_RDWR);
      }
    }
    std::list<std::unique_ptr<Connection>> all;
    all.swap(connections_);
    lock.unlock();
    for (auto& c : all)
      c->thread.join();
  });
}

}  // namespace carapace::http
