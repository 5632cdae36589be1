#include "egress/proxy/tls_client.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace carapace::egress {
namespace {

// The first queued OpenSSL error as text, and the queue emptied (it is per thread, and a worker
// thread serves many connections).
std::string openssl_error(const char* fallback) {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return fallback;
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

int ms_until(http::Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - http::Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
}

// A socket BIO that hands out `early` (bytes already read off the socket) before reading it.
struct PrefixedSocket {
  int fd;
  std::string early;
  size_t pos = 0;
};

int prefixed_write(BIO* b, const char* data, size_t len, size_t* written) {
  auto* s = static_cast<PrefixedSocket*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  const ssize_t n = ::send(s->fd, data, len, MSG_NOSIGNAL);
  if (n >= 0) {
    *written = static_cast<size_t>(n);
    return 1;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) BIO_set_retry_write(b);
  return 0;
}

int prefixed_read(BIO* b, char* data, size_t len, size_t* read) {
  auto* s = static_cast<PrefixedSocket*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  if (s->pos < s->early.size()) {
    const size_t n = std::min(len, s->early.size() - s->pos);
    std::copy_n(s->early.data() + s->pos, n, data);
    s->pos += n;
    *read = n;
    return 1;
  }
  const ssize_t n = ::recv(s->fd, data, len, 0);
  if (n > 0) {
    *read = static_cast<size_t>(n);
    return 1;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(b);
  return 0;
}

long prefixed_ctrl(BIO*, int cmd, long, void*) {
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

int prefixed_create(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

int prefixed_destroy(BIO* b) {
  delete static_cast<PrefixedSocket*>(BIO_get_data(b));
  BIO_set_data(b, nullptr);
  return 1;
}

const BIO_METHOD* prefixed_method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "carapace socket");
    if (m == nullptr) return m;
    BIO_meth_set_write_ex(m, prefixed_write);
    BIO_meth_set_read_ex(m, prefixed_read);
    BIO_meth_set_ctrl(m, prefixed_ctrl);
    BIO_meth_set_create(m, prefixed_create);
    BIO_meth_set_destroy(m, prefixed_destroy);
    return m;
  }();
  return method;
}

}  // namespace

Result<std::shared_ptr<TlsClientContext>> TlsClientContext::create(const std::string& ca_file) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return make_error("TLS: " + openssl_error("SSL_CTX_new failed"));
  std::shared_ptr<TlsClientContext> out(new TlsClientContext(ctx));
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
    return make_error("TLS: " + openssl_error("cannot require TLS 1.2"));
  // Only the given bundle: no default paths, which could be another trust store than the one
  // the operator meant.
  if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1)
    return make_error("TLS: cannot load the CA bundle " + ca_file + ": " +
                      openssl_error("no certificates"));
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  // No session cache or tickets kept across sandboxes' requests: each request is its own.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                               SSL_OP_IGNORE_UNEXPECTED_EOF);
  return out;
}

TlsClientContext::~TlsClientContext() {
  SSL_CTX_free(ctx_);
}

Result<std::unique_ptr<TlsStream>> TlsStream::connect(const TlsClientContext& ctx, int fd,
                                                      const std::string& host,
                                                      http::Clock::time_point deadline,
                                                      int cancel_fd) {
  ERR_clear_error();
  SSL* ssl = SSL_new(ctx.get());
  if (ssl == nullptr) return make_error(openssl_error("SSL_new failed"));
  std::unique_ptr<TlsStream> s(new TlsStream(ssl, fd, cancel_fd));
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  if (X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size()) != 1 ||
      SSL_set_tlsext_host_name(ssl, host.c_str()) != 1 || SSL_set_fd(ssl, fd) != 1)
    return make_error(openssl_error("cannot set up the TLS connection"));
  return handshake(std::move(s), false, deadline);
}

Result<std::unique_ptr<TlsStream>> TlsStream::accept(SSL_CTX* ctx, int fd, std::string early,
                                                     http::Clock::time_point deadline,
                                                     int cancel_fd) {
  ERR_clear_error();
  SSL* ssl = SSL_new(ctx);
  if (ssl == nullptr) return make_error(openssl_error("SSL_new failed"));
  std::unique_ptr<TlsStream> s(new TlsStream(ssl, fd, cancel_fd));
  const BIO_METHOD* method = prefixed_method();
  BIO* bio = method != nullptr ? BIO_new(method) : nullptr;
  if (bio == nullptr) return make_error(openssl_error("cannot make the client's BIO"));
  BIO_set_data(bio, new PrefixedSocket{fd, std::move(early)});
  SSL_set_bio(ssl, bio, bio);
  return handshake(std::move(s), true, deadline);
}

Result<std::unique_ptr<TlsStream>> TlsStream::handshake(std::unique_ptr<TlsStream> s, bool server,
                                                        http::Clock::time_point deadline) {
  SSL* ssl = s->ssl_;
  for (;;) {
    const int r = server ? SSL_accept(ssl) : SSL_connect(ssl);
    if (r == 1) break;
    const int err = SSL_get_error(ssl, r);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      switch (s->wait(err, deadline)) {
        case http::IoStatus::kOk:
          continue;
        case http::IoStatus::kTimeout:
          return make_error("TLS handshake timed out");
        case http::IoStatus::kCancelled:
          return make_error("TLS handshake cancelled");
        default:
          return make_error("TLS handshake: the connection failed");
      }
    }
    const long verify = SSL_get_verify_result(ssl);
    if (!server && verify != X509_V_OK) {
      ERR_clear_error();
      return make_error(std::string("certificate verify failed: ") +
                        X509_verify_cert_error_string(verify));
    }
    if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)
      return make_error(server ? "TLS handshake: the client closed the connection"
                               : "TLS handshake: the server closed the connection");
    return make_error("TLS handshake failed: " + openssl_error("protocol error"));
  }
  // Belt and braces: SSL_VERIFY_PEER fails the handshake on a bad chain, but say it again here
  // rather than rely on one flag.
  if (server) return s;
  if (SSL_get_verify_result(ssl) != X509_V_OK || SSL_get0_peer_certificate(ssl) == nullptr)
    return make_error("certificate verify failed: no verified certificate");
  return s;
}

TlsStream::~TlsStream() {
  // No close_notify wait: the request is over whichever side ended it.
  SSL_set_quiet_shutdown(ssl_, 1);
  SSL_free(ssl_);
  ERR_clear_error();
}

http::IoStatus TlsStream::wait(int err, http::Clock::time_point deadline) {
  for (;;) {
    pollfd fds[2] = {{fd_, static_cast<short>(err == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN), 0},
                     {cancel_fd_, POLLIN, 0}};
    const int n = ::poll(fds, cancel_fd_ >= 0 ? 2 : 1, ms_until(deadline));
    if (n < 0) {
      if (errno == EINTR) continue;
      return http::IoStatus::kError;
    }
    if (n == 0) return http::IoStatus::kTimeout;
    if (cancel_fd_ >= 0 && (fds[1].revents & POLLIN)) return http::IoStatus::kCancelled;
    return http::IoStatus::kOk;  // ready, or an error OpenSSL will see on its next call
  }
}

Status TlsStream::write_all(std::string_view data, std::chrono::milliseconds stall) {
  while (!data.empty()) {
    size_t written = 0;
    const int r = SSL_write_ex(ssl_, data.data(), data.size(), &written);
    if (r == 1) {
      data.remove_prefix(written);
      continue;
    }
    const int err = SSL_get_error(ssl_, r);
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
      ERR_clear_error();
      return make_error("TLS write failed");
    }
    if (wait(err, http::Clock::now() + stall) != http::IoStatus::kOk)
      return make_error("TLS write stalled or was cut");
  }
  return ok_status();
}

http::IoStatus TlsStream::read_some(std::string& out, size_t max, std::chrono::milliseconds idle) {
  const auto deadline = http::Clock::now() + idle;
  const size_t at = out.size();
  out.resize(at + max);
  for (;;) {
    size_t got = 0;
    const int r = SSL_read_ex(ssl_, out.data() + at, max, &got);
    if (r == 1) {
      out.resize(at + got);
      return http::IoStatus::kOk;
    }
    const int err = SSL_get_error(ssl_, r);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      const http::IoStatus st = wait(err, deadline);
      if (st == http::IoStatus::kOk) continue;
      out.resize(at);
      return st;
    }
    out.resize(at);
    ERR_clear_error();
    // With SSL_OP_IGNORE_UNEXPECTED_EOF a close without close_notify is a zero return too.
    return err == SSL_ERROR_ZERO_RETURN ? http::IoStatus::kClosed : http::IoStatus::kError;
  }
}

}  // namespace carapace::egress

namespace carapace::egress {

RelayEnd TlsStream::bridge(int plain, std::chrono::milliseconds idle, RelayBytes& bytes) {
  constexpr size_t kChunk = 16 * 1024;
  std::string down;  // read from TLS, not yet sent to `plain`
  std::string up;    // read from `plain`, not yet written to TLS
  bool tls_eof = false;
  bool plain_shut = false;
  bool plain_eof = false;
  auto last = http::Clock::now();
  char buf[kChunk];
  for (;;) {
    bool moved = false;
    short tls_events = 0;
    short plain_events = 0;
    auto want = [&](int err) {
      if (err == SSL_ERROR_WANT_READ) tls_events |= POLLIN;
      if (err == SSL_ERROR_WANT_WRITE) tls_events |= POLLOUT;
      return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE;
    };
    if (!tls_eof && down.empty()) {
      size_t got = 0;
      const int r = SSL_read_ex(ssl_, buf, sizeof buf, &got);
      if (r == 1) {
        down.assign(buf, got);
        bytes.up += got;
        moved = true;
      } else {
        const int err = SSL_get_error(ssl_, r);
        if (err == SSL_ERROR_ZERO_RETURN) {
          tls_eof = true;
        } else if (!want(err)) {
          ERR_clear_error();
          return RelayEnd::kReset;
        }
      }
    }
    if (!down.empty()) {
      const ssize_t n = ::send(plain, down.data(), down.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        down.erase(0, static_cast<size_t>(n));
        moved = true;
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return RelayEnd::kReset;
      }
      if (!down.empty()) plain_events |= POLLOUT;
    }
    if (tls_eof && down.empty() && !plain_shut) {
      ::shutdown(plain, SHUT_WR);
      plain_shut = true;
    }
    if (!plain_eof && up.empty()) {
      const ssize_t n = ::recv(plain, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        up.assign(buf, static_cast<size_t>(n));
        moved = true;
      } else if (n == 0) {
        plain_eof = true;
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return RelayEnd::kReset;
      } else {
        plain_events |= POLLIN;
      }
    }
    if (!up.empty()) {
      // Retried with the same bytes at the same address until it goes (OpenSSL's rule).
      size_t written = 0;
      const int r = SSL_write_ex(ssl_, up.data(), up.size(), &written);
      if (r == 1) {
        bytes.down += written;
        up.erase(0, written);
        moved = true;
      } else if (!want(SSL_get_error(ssl_, r))) {
        ERR_clear_error();
        return RelayEnd::kReset;
      }
    }
    // The proxy's side is done (it never half-closes): what it sent is written, close_notify
    // says the end.
    if (plain_eof && up.empty()) {
      (void)SSL_shutdown(ssl_);
      ERR_clear_error();
      return RelayEnd::kClosed;
    }
    const auto now = http::Clock::now();
    if (moved) {
      last = now;
      continue;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(last + idle - now);
    if (left.count() <= 0) return RelayEnd::kIdle;
    pollfd fds[3] = {{fd_, tls_events, 0}, {plain, plain_events, 0}, {cancel_fd_, POLLIN, 0}};
    const int n = ::poll(fds, cancel_fd_ >= 0 ? 3 : 2,
                         static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (n < 0 && errno != EINTR) return RelayEnd::kReset;
    if (n > 0 && cancel_fd_ >= 0 && (fds[2].revents & POLLIN)) return RelayEnd::kStopped;
  }
}

}  // namespace carapace::egress
