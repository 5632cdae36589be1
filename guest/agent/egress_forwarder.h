// The sandbox's side of the host's egress proxy (egress/README.md): a TCP listener on 127.0.0.1
// that tools reach through HTTP_PROXY and its friends, every connection passed byte for byte to
// the proxy -- over vsock to the host (CID 2) in a microVM, over the Unix socket the jail shows
// in the process back end. It decides nothing: the host proxy reads the request, applies the
// policy and dials; a sandbox that skips the forwarder reaches nothing either.
//
// Transparent mode, for programs that ignore the proxy variables: a stub resolver on
// 127.0.0.1:53 answers host names with stand-in addresses (fake_addresses.h), and for each
// stand-in the forwarder listens on the captured ports; a connection there goes to the proxy as
// `CONNECT name:port`, the proxy deciding as for any other.
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
#include "guest/agent/fake_addresses.h"

namespace carapace::agent {

// Where the forwarder's connections go: "unix:/run/carapace/egress.sock" (an absolute path that
// fits sockaddr_un) or "vsock:PORT" (a port of the host, CID 2).
// A TCP listener on address:port (host byte order; port 0: any, written to *bound_port).
Result<UniqueFd> bind_tcp_listener(uint32_t address, uint16_t port, uint16_t* bound_port);

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

struct TransparentEgress {
  static constexpr size_t kMaxPorts = 16;
  std::vector<uint16_t> ports;  // captured on every stand-in address; empty: no transparent mode
  uint16_t dns_port = 53;       // 0: any free port (tests)
  // Shared with the next forwarder, so that addresses programs already hold keep working.
  std::shared_ptr<FakeAddressTable> names;
};

class EgressForwarder {
 public:
  static constexpr size_t kMaxConnections = 256;  // more wait in the listen backlog
  // Capture listeners, over all names and ports: past it a stand-in still resolves but its
  // ports refuse connections (the proxy variables still work).
  static constexpr size_t kMaxCaptureListeners = 2048;

  // Listens on 127.0.0.1:`port` (0: any free port), and with `transparent.ports` also runs the
  // stub resolver and the capture listeners.
  static Result<std::unique_ptr<EgressForwarder>> start(uint16_t port, ForwarderUpstream upstream,
                                                        TransparentEgress transparent = {});
  // Stops listening, cuts every connection and waits for them.
  ~EgressForwarder();
  EgressForwarder(const EgressForwarder&) = delete;
  EgressForwarder& operator=(const EgressForwarder&) = delete;

  uint16_t port() const { return port_; }
  uint16_t dns_port() const { return dns_port_; }
  const ForwarderUpstream& upstream() const { return upstream_; }
  const std::vector<uint16_t>& transparent_ports() const { return transparent_.ports; }

 private:
  // A listener the acceptor watches: the proxy port, or a stand-in's captured port.
  struct Listener {
    UniqueFd fd;
    std::string connect_target;  // "name:port" for a capture listener; "" for the proxy port
  };

  // epoll tags besides listeners_ indices.
  static constexpr uint64_t kStopTag = ~uint64_t{0};
  static constexpr uint64_t kDnsTag = kStopTag - 1;

  EgressForwarder(ForwarderUpstream upstream, TransparentEgress transparent, EventFd stop);
  Status open_listeners(uint16_t port);
  Status open_stub_resolver();
  Status watch(int fd, uint64_t tag);
  void accept_loop();
  void accept_from(const Listener& l);
  void answer_dns();
  void capture(const std::string& name, uint32_t address);
  void relay(UniqueFd client, std::string connect_target);
  Result<UniqueFd> connect_upstream() const;
  // Asks the proxy for `target` on `upstream` (blocking, bounded); passes what the proxy sent
  // after its 200 to `client`. False when the proxy refused or went away.
  static bool open_tunnel(int client, int upstream, const std::string& target);

  ForwarderUpstream upstream_;
  TransparentEgress transparent_;
  uint16_t port_ = 0;
  uint16_t dns_port_ = 0;
  EventFd stop_;  // readable once stopping: every relay and the acceptor watch it
  UniqueFd epoll_;
  UniqueFd dns_;
  // Touched only by the acceptor thread once it runs; [0] is the proxy port.
  std::vector<Listener> listeners_;
  std::vector<uint32_t> captured_;  // stand-ins whose listeners are open
  std::thread acceptor_;
  std::mutex mu_;  // active_
  std::condition_variable idle_;
  size_t active_ = 0;
};

}  // namespace carapace::agent
