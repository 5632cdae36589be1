// Test fixtures for the egress proxy: a loopback upstream that records what reached it, a
// resolver table (with answers that change per call, for rebinding), and a client on the proxy's
// Unix socket. Loopback upstreams pass only the test's own address check (loopback_admitting_check
// below): the production check never admits them.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/base/unique_fd.h"
#include "egress/policy/address_class.h"
#include "egress/policy/egress_policy.h"
#include "egress/proxy/upstream.h"
#include "tests/integration/unix_sockets.h"

namespace carapace::egress::testing {

// A TCP server on 127.0.0.1: kEcho sends back what it reads; kHttp reads one request (head, then
// a Content-Length or chunked body), records it and answers 200 "hello" with Connection: close.
class LoopbackUpstream {
 public:
  enum class Mode { kEcho, kHttp };

  explicit LoopbackUpstream(Mode mode) : mode_(mode) {
    fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(fd_.get(), 64) != 0)
      throw std::runtime_error(std::string("loopback upstream: ") + strerror(errno));
    socklen_t len = sizeof a;
    ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~LoopbackUpstream() {
    stop_ = true;
    ::shutdown(fd_.get(), SHUT_RDWR);
    thread_.join();
    for (auto& t : workers_)
      t.join();
  }

  uint16_t port() const { return port_; }
  int connections() const { return connections_; }
  std::vector<std::string> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  void run() {
    while (!stop_) {
      int c = ::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      connections_++;
      workers_.emplace_back([this, c] { mode_ == Mode::kEcho ? echo(c) : http(c); });
    }
  }
  static void echo(int c) {
    char buf[65536];
    for (;;) {
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      if (::send(c, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) break;
    }
    ::close(c);
  }
  void http(int c) {
    std::string got;
    char buf[4096];
    timeval tv{5, 0};
    ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (!request_complete(got)) {
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    {
      std::lock_guard lock(mu_);
      requests_.push_back(got);
    }
    const char kAnswer[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
    ::send(c, kAnswer, sizeof kAnswer - 1, MSG_NOSIGNAL);
    ::close(c);
  }
  static bool request_complete(const std::string& s) {
    size_t end = s.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    std::string head = s.substr(0, end);
    size_t cl = head.find("Content-Length: ");
    if (cl != std::string::npos) return s.size() >= end + 4 + std::stoul(head.substr(cl + 16));
    if (head.find("Transfer-Encoding: chunked") != std::string::npos)
      return s.find("\r\n0\r\n\r\n", end) != std::string::npos;
    return true;
  }

  Mode mode_;
  UniqueFd fd_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::vector<std::thread> workers_;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  mutable std::mutex mu_;
  std::vector<std::string> requests_;
};

// Names -> answers; a name with several answer lists gives the next one on each lookup (the last
// one again once they run out), and every lookup is counted.
class TableResolver {
 public:
  void add(const std::string& name, std::vector<std::vector<IpAddress>> answers) {
    std::lock_guard lock(mu_);
    table_[name] = std::move(answers);
  }
  int lookups(const std::string& name) const {
    std::lock_guard lock(mu_);
    auto it = calls_.find(name);
    return it == calls_.end() ? 0 : it->second;
  }
  Resolver resolver() {
    return [this](const std::string& name) -> Result<std::vector<IpAddress>> {
      std::lock_guard lock(mu_);
      int n = calls_[name]++;
      auto it = table_.find(name);
      if (it == table_.end() || it->second.empty()) return make_error("cannot resolve " + name);
      return it->second[std::min<size_t>(static_cast<size_t>(n), it->second.size() - 1)];
    };
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::vector<std::vector<IpAddress>>> table_;
  std::map<std::string, int> calls_;
};

// The production address check (no host addresses), except that loopback is admitted: the
// tests' upstreams live there. Only this test code can build such a check.
inline AddressCheck loopback_admitting_check() {
  return [](const EgressPolicy& p, const Destination& d, const IpAddress& a) {
    Decision dec = check_address(p, d, a, {});
    if (!dec.allowed && classify_address(a) == AddressClass::kLoopback)
      return Decision{true, "loopback admitted by the test", ""};
    return dec;
  };
}

// A client of the proxy's Unix socket (invalid when nothing listens there).
inline UniqueFd connect_proxy(const std::string& path) {
  return carapace::testing::unix_socket(SOCK_STREAM, path, carapace::testing::SocketEnd::kConnect);
}

// A TCP connection to 127.0.0.1:`port` (invalid when nothing listens there).
inline UniqueFd connect_loopback(uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return UniqueFd();
  return fd;
}

// A port on 127.0.0.1 with nothing listening: a connect to it is refused (ECONNREFUSED).
inline uint16_t closed_loopback_port() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error(std::string("closed port: ") + strerror(errno));
  return ntohs(a.sin_port);  // bound, never listening, closed on return
}

// A listener on 127.0.0.1 that never accepts, its accept queue (backlog 0: one connection) filled
// by connections of its own: Linux drops a SYN to a listener whose queue is full, so a connect to
// it times out, as to a host that drops packets, without leaving loopback.
class UnansweredPort {
 public:
  UnansweredPort() {
    fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(fd_.get(), 0) != 0 ||
        ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error(std::string("unanswered port: ") + strerror(errno));
    port_ = ntohs(a.sin_port);
    for (auto& f : fillers_) {
      f = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      (void)::connect(f.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    // The first filler's handshake completes in the background; once it sits in the queue, the
    // queue is full.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  uint16_t port() const { return port_; }

 private:
  UniqueFd fd_;
  UniqueFd fillers_[2];
  uint16_t port_ = 0;
};

// Reads until EOF or `timeout`.
inline std::string read_until_eof(int fd, std::chrono::milliseconds timeout) {
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[65536];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

inline std::string exchange(const std::string& path, const std::string& request,
                            std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  UniqueFd fd = connect_proxy(path);
  if (!fd.valid()) return "connect failed";
  ::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL);
  return read_until_eof(fd.get(), timeout);
}

}  // namespace carapace::egress::testing
