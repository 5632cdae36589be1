// The proxy's TLS client, for the origins behind plain-HTTP aliases (proxy_credentials.h): TLS
// 1.2 or later, the server's certificate verified against a CA bundle and for the origin's name
// (SNI the same name). The bundle is read once, when the context is made, so a proxy confined
// afterwards (proxy_confinement.h) needs no file access for it.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "common/base/byte_relay.h"
#include "common/base/result.h"
#include "common/http/socket_io.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace carapace::egress {

inline constexpr char kSystemCaBundle[] = "/etc/ssl/certs/ca-certificates.crt";

class TlsClientContext {
 public:
  // The CAs of `ca_file` (PEM) are the only ones trusted.
  static Result<std::shared_ptr<TlsClientContext>> create(const std::string& ca_file);
  ~TlsClientContext();
  TlsClientContext(const TlsClientContext&) = delete;
  TlsClientContext& operator=(const TlsClientContext&) = delete;

  SSL_CTX* get() const { return ctx_; }

 private:
  explicit TlsClientContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

// One TLS connection over a connected non-blocking socket the caller owns. Every wait also
// watches `cancel_fd` (the connection's cut signal).
class TlsStream {
 public:
  // The handshake, with the certificate checked for `host`. The error is one line saying why
  // ("certificate verify failed: Hostname mismatch", "... unable to get local issuer certificate").
  static Result<std::unique_ptr<TlsStream>> connect(const TlsClientContext& ctx, int fd,
                                                    const std::string& host,
                                                    http::Clock::time_point deadline,
                                                    int cancel_fd);
  // The server side, for a connection the proxy terminates (tls_authority.h gives `ctx`): the
  // handshake over `fd`, reading `early` first (bytes of the client read before, a ClientHello
  // sent right behind the CONNECT). The error is one line ("... tlsv1 alert unknown ca" for a
  // client that does not trust the proxy's CA).
  static Result<std::unique_ptr<TlsStream>> accept(SSL_CTX* ctx, int fd, std::string early,
                                                   http::Clock::time_point deadline, int cancel_fd);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // All of `data`, failing when the peer takes nothing for `stall`.
  Status write_all(std::string_view data, std::chrono::milliseconds stall);
  // Appends what arrives (at most `max` bytes) to `out`: kOk, kClosed at the end of the stream
  // (close_notify, or the peer closing without one: the response's own framing tells a client
  // whether it is whole), kTimeout after `idle` without a byte, kCancelled, kError.
  http::IoStatus read_some(std::string& out, size_t max, std::chrono::milliseconds idle);

  // Carries plaintext between this stream and `plain` (a non-blocking stream socket, the
  // proxy's side of a socketpair) both ways until both have ended, one fails, nothing moves for
  // `idle` or the cancel fd fires. The end of the TLS stream is passed on as shutdown(SHUT_WR)
  // of `plain`; the end of `plain` as close_notify. `bytes.up`: plaintext from this stream.
  RelayEnd bridge(int plain, std::chrono::milliseconds idle, RelayBytes& bytes);

 private:
  static Result<std::unique_ptr<TlsStream>> handshake(std::unique_ptr<TlsStream> s, bool server,
                                                      http::Clock::time_point deadline);
  TlsStream(SSL* ssl, int fd, int cancel_fd) : ssl_(ssl), fd_(fd), cancel_fd_(cancel_fd) {}
  // Waits for what OpenSSL asked for (`err`: SSL_ERROR_WANT_READ or _WRITE) until `deadline`.
  http::IoStatus wait(int err, http::Clock::time_point deadline);

  SSL* ssl_;
  int fd_;
  int cancel_fd_;
};

}  // namespace carapace::egress
