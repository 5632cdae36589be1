#include "egress/proxy/tls_client.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <poll.h>

#include <cerrno>

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
  for (;;) {
    const int r = SSL_connect(ssl);
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
    if (verify != X509_V_OK) {
      ERR_clear_error();
      return make_error(std::string("certificate verify failed: ") +
                        X509_verify_cert_error_string(verify));
    }
    if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)
      return make_error("TLS handshake: the server closed the connection");
    return make_error("TLS handshake failed: " + openssl_error("protocol error"));
  }
  // Belt and braces: SSL_VERIFY_PEER fails the handshake on a bad chain, but say it again here
  // rather than rely on one flag.
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
