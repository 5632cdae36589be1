// The egress proxy of one sandbox: a Unix-socket listener that speaks HTTP/1.1 CONNECT (a byte
// tunnel: TLS passes through untouched), absolute-form plain HTTP and SOCKS5 CONNECT (RFC 1928,
// told apart by its first byte), under an EgressPolicy that may be replaced while it runs. The
// proxy resolves names and dials itself (upstream.h); the sandbox never picks an address. Every
// decision is one JSON line to the log sink and a count in stats().
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/base/event_fd.h"
#include "common/base/result.h"
#include "common/http/listener.h"
#include "egress/credentials/proxy_credentials.h"
#include "egress/policy/egress_policy.h"
#include "egress/proxy/tls_authority.h"
#include "egress/proxy/tls_client.h"
#include "egress/proxy/upstream.h"

namespace carapace::egress {

struct EgressProxyOptions {
  std::string listen_path;  // the Unix socket the sandbox reaches
  // 0600: only this process's user connects (a VMM of the same user); 0666 where the sandbox runs
  // as another user and the socket's folder is what keeps everyone else out.
  mode_t listen_mode = 0600;
  std::string sandbox;  // named in every log line
  EgressPolicy policy;
  Resolver resolve = resolve_with_system;
  // Null: check_address with this host's interface addresses (read at start, then again when
  // older than kHostAddressesMaxAge: host_addresses.h).
  AddressCheck check;
  size_t max_connections = 256;                   // past it a new connection gets 503 and is closed
  std::chrono::milliseconds head_timeout{10000};  // the whole request head (slowloris)
  std::chrono::milliseconds connect_timeout{10000};  // per upstream address
  std::chrono::milliseconds idle_timeout{300000};    // a tunnel nothing crossed for this long
  size_t max_head_bytes = 16 * 1024;
  // Bound but not accepting until open_for_clients(): for a program that must give up its
  // privileges (after binding its other sockets) before it reads a sandbox's first byte.
  bool start_closed = false;
  // One JSON object per line, without the newline. Null: stderr.
  std::function<void(const std::string&)> log;
  // The credentials put into plain-HTTP requests and the TLS origins behind aliases
  // (proxy_credentials.h); set_credentials replaces them live. Held in memory only.
  ProxyCredentials credentials;
  // The CAs an origin's certificate must chain to, read at start (before any confinement). The
  // system bundle in production; tests give their own CA.
  std::string ca_file = kSystemCaBundle;
};

struct EgressStats {
  uint64_t connections = 0;  // accepted
  uint64_t allowed = 0;
  uint64_t denied_rule = 0;        // a deny rule, or no allow rule, for the name or literal
  uint64_t denied_address = 0;     // an address the name resolved to is not allowed
  uint64_t bad_requests = 0;       // not a proxy request this proxy speaks
  uint64_t upstream_failures = 0;  // allowed, but not resolved or not reached
  uint64_t over_capacity = 0;
  uint64_t bytes_up = 0;
  uint64_t bytes_down = 0;
  uint64_t active = 0;               // connections open now
  uint64_t credential_injected = 0;  // requests sent on with a credential's secret put in
  uint64_t credential_refused = 0;   // refused for a sentinel out of place or a foreign key
};

class EgressProxy {
 public:
  static Result<std::unique_ptr<EgressProxy>> start(EgressProxyOptions options);
  ~EgressProxy();
  EgressProxy(const EgressProxy&) = delete;
  EgressProxy& operator=(const EgressProxy&) = delete;

  // Replaces the policy for new requests and closes every open connection whose destination the
  // new policy denies (by name or by the address it was dialled at).
  void set_policy(EgressPolicy policy);
  EgressPolicy policy() const;
  // Replaces the credentials and origins for requests from now on (plain HTTP is one request per
  // connection, so none in flight changes; tunnels never carry a secret).
  void set_credentials(ProxyCredentials credentials);
  std::shared_ptr<const ProxyCredentials> credentials() const;
  EgressStats stats() const;
  // This proxy's CA certificate (PEM), made at start, which the sandbox trusts for the hosts
  // with credentials (their CONNECTs are terminated); "" when it could not be made (then no
  // CONNECT is terminated). Its key never leaves the proxy.
  std::string ca_pem() const { return authority_ ? authority_->cert_pem() : std::string(); }
  const TlsAuthority* authority() const { return authority_.get(); }
  const std::string& listen_path() const { return options_.listen_path; }

  // With start_closed: starts accepting (connections that came meanwhile wait in the backlog).
  void open_for_clients();

  // Stops accepting, cuts every connection and waits for their threads. Idempotent.
  void stop();

 private:
  struct Connection;
  class Session;  // one connection's request, decision and tunnel (proxy_session.h)
  explicit EgressProxy(EgressProxyOptions options);
  // A worker: waits for the listener, accepts one connection and serves it itself, then waits
  // again. The first (acceptor_) waits for open_for_clients() first; the others are detached.
  void work(bool first);
  // Takes the accepted `fd` under the cap: a Connection to serve, or null when it was refused
  // (503) or the proxy is stopping. Starts another worker when this one was the last waiting.
  std::shared_ptr<Connection> take(UniqueFd fd);
  void serve(const std::shared_ptr<Connection>& c);
  void handle(Connection& c);
  void finish(const std::shared_ptr<Connection>& c);
  void log_line(const std::string& line);

  EgressProxyOptions options_;
  http::UnixListener listener_;
  std::optional<EventFd> stop_;
  std::thread acceptor_;

  mutable std::mutex mu_;
  std::condition_variable drained_;
  std::shared_ptr<const EgressPolicy> policy_;
  std::shared_ptr<const ProxyCredentials> credentials_;
  // The TLS client for origins; null with tls_error_ saying why (no CA bundle), so a proxy
  // without one still serves everything else.
  std::shared_ptr<TlsClientContext> tls_;
  std::string tls_error_;
  // The CA of the terminated connections (tls_authority.h); null if it could not be made.
  std::unique_ptr<TlsAuthority> authority_;
  std::vector<std::shared_ptr<Connection>> open_;  // accepted, not finished
  // The workers (one connection each at a time) and those of them waiting on the listener: the
  // kernel hands a new connection to one waiting worker, which serves it on its own thread (no
  // hand-off to another thread on the request's path). At least one waits whenever the proxy
  // is open and has a thread to spare.
  size_t workers_ = 0;
  size_t idle_workers_ = 0;
  EgressStats stats_;
  bool stopped_ = false;
  bool opened_ = false;
  std::condition_variable opened_cv_;
};

}  // namespace carapace::egress
