// The sandbox's side of the host's egress proxy (egress/README.md): a TCP listener on 127.0.0.1
// that tools reach through HTTP_PROXY and its friends, every connection passed byte for byte to
// the proxy -- over vsock to the host (CID 2) in a microVM, over the Unix socket the jail shows
// in the process back end. It decides nothing: the host proxy reads the request, applies the
// policy and dials; a sandbox that skips the forwarder reaches nothing either.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/base/event_fd.h"
#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace carapace::agent {

// Where the forwarder's connections go: "unix:/run/carapace/egress.sock" (an absolute path that
// fits sockaddr_un) or "vsock:PORT" (a port of the host, CID 2).
struct ForwarderUpstream {
  enum class Kind : uint8_t { kUnix, kVsock };
  Kind kind = Kind::kUnix;
  std::string path;
  uint32_t port = 0;
  std::string text;  // as given
};
Result<ForwarderUpstream> parse_forwarder_upstream(std::string_view text);

// HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, their lower-case forms (curl reads http_proxy only in lower
// case) and NO_PROXY/no_proxy for local names, all for http://127.0.0.1:port.
std::vector<std::string> proxy_env(uint16_t port);

class EgressForwarder {
 public:
  static constexpr size_t kMaxConnections = 256;  // more wait in the listen backlog

  // Listens on 127.0.0.1:`port` (0: any free port).
  static Result<std::unique_ptr<EgressForwarder>> start(uint16_t port, ForwarderUpstream upstream);
  // Stops listening, cuts every connection and waits for them.
  ~EgressForwarder();
  EgressForwarder(const EgressForwarder&) = delete;
  EgressForwarder& operator=(const EgressForwarder&) = delete;

  uint16_t port() const { return port_; }
  const ForwarderUpstream& upstream() const { return upstream_; }

 private:
  EgressForwarder(UniqueFd listener, uint16_t port, ForwarderUpstream upstream, EventFd stop);
  void accept_loop();
  void relay(UniqueFd client);
  Result<UniqueFd> connect_upstream() const;

  UniqueFd listener_;
  uint16_t port_;
  ForwarderUpstream upstream_;
  EventFd stop_;  // readable once stopping: every relay and the acceptor watch it
  std::thread acceptor_;
  std::mutex mu_;
  std::condition_variable idle_;
  size_t active_ = 0;
};

}  // namespace carapace::agent
