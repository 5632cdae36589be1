#include "tests/agent/fake_vsock_mux.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace carapace::testing {
namespace {

UniqueFd unix_socket(const std::string& path, bool listen) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  bool ok = listen ? ::bind(fd.get(), sa, sizeof addr) == 0 && ::listen(fd.get(), 8) == 0
                   : ::connect(fd.get(), sa, sizeof addr) == 0;
  return ok ? std::move(fd) : UniqueFd();
}

}  // namespace

FakeVsockMux::FakeVsockMux(std::string path, std::string agent_socket, uint32_t port)
    : path_(std::move(path)), agent_socket_(std::move(agent_socket)), port_(port) {
  listen_ = unix_socket(path_, true);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) return;
  stop_r_.reset(p[0]);
  stop_w_.reset(p[1]);
  thread_ = std::thread([this] { run(); });
}

FakeVsockMux::~FakeVsockMux() {
  if (stop_w_.valid()) (void)!::write(stop_w_.get(), "x", 1);
  if (thread_.joinable()) thread_.join();
}

void FakeVsockMux::run() {
  for (;;) {
    pollfd fds[2] = {{listen_.get(), POLLIN, 0}, {stop_r_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 || fds[1].revents) return;
    UniqueFd client(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client.valid()) continue;
    std::string line;
    char c;
    while (line.size() < 64 && ::read(client.get(), &c, 1) == 1 && c != '\n')
      line.push_back(c);
    if (line != "CONNECT " + std::to_string(port_)) continue;  // closes the connection
    UniqueFd agent = unix_socket(agent_socket_, false);
    if (!agent.valid()) continue;
    const std::string ok = "OK 1073741824\n";
    if (::write(client.get(), ok.data(), ok.size()) != static_cast<ssize_t>(ok.size())) continue;
    relay(client.get(), agent.get());
  }
}

void FakeVsockMux::relay(int a, int b) {
  char buf[65536];
  for (;;) {
    pollfd fds[3] = {{a, POLLIN, 0}, {b, POLLIN, 0}, {stop_r_.get(), POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0 || fds[2].revents) return;
    for (int i = 0; i < 2; ++i) {
      if (!fds[i].revents) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) return;
      int to = i == 0 ? b : a;
      for (ssize_t off = 0; off < n;) {
        ssize_t w = ::send(to, buf + off, static_cast<size_t>(n - off), MSG_NOSIGNAL);
        if (w <= 0) return;
        off += w;
      }
    }
  }
}

}  // namespace carapace::testing
