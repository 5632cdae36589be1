// A test CA and certificates made at test time with the OpenSSL API (EC P-256, SHA-256), and a
// TLS server on 127.0.0.1 that records the request it read over TLS and answers 200 "secure".
// Nothing is read from disk but the CA file the test itself writes for the proxy.
#pragma once

#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/base/unique_fd.h"

namespace carapace::egress::testing {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

inline void tls_check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test TLS: ") + what);
}

inline Key new_key() {
  Key k(EVP_EC_gen("P-256"));
  tls_check(k != nullptr, "EVP_EC_gen");
  return k;
}

inline void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  tls_check(ext != nullptr && X509_add_ext(cert, ext, -1) == 1, "extension");
  X509_EXTENSION_free(ext);
}

// A certificate for `cn` with `key`, signed by `issuer`/`issuer_key` (itself when null): a CA
// when `ca`, else a server certificate for the DNS name `cn`.
inline Cert make_cert(const std::string& cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key,
                      bool ca) {
  static std::atomic<long> serial{1};
  Cert c(X509_new());
  X509_set_version(c.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(c.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(c.get()), 24 * 3600);
  X509_set_pubkey(c.get(), key);
  X509_NAME* name = X509_get_subject_name(c.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : c.get();
  X509_set_issuer_name(c.get(), X509_get_subject_name(signer));
  if (ca) {
    add_ext(c.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(c.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_ext(c.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    add_ext(c.get(), signer, NID_subject_alt_name, ("DNS:" + cn).c_str());
    add_ext(c.get(), signer, NID_ext_key_usage, "serverAuth");
  }
  tls_check(X509_sign(c.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) > 0,
            "X509_sign");
  return c;
}

// A CA: its key and self-signed certificate, which it can write as PEM for the proxy to trust.
struct TestCa {
  explicit TestCa(const std::string& cn) : key(new_key()) {
    cert = make_cert(cn, key.get(), nullptr, nullptr, true);
  }
  void write_pem(const std::string& path) const {
    FILE* f = std::fopen(path.c_str(), "w");
    tls_check(f != nullptr && PEM_write_X509(f, cert.get()) == 1, "writing the CA");
    std::fclose(f);
  }
  Key key;
  Cert cert;
};

// TLS on 127.0.0.1 with a leaf for `name` signed by `ca`. Each connection: the handshake, one
// request head read, recorded and answered. A failed handshake is counted, nothing recorded.
class TlsUpstream {
 public:
  TlsUpstream(const TestCa& ca, const std::string& name) : key_(new_key()) {
    cert_ = make_cert(name, key_.get(), ca.cert.get(), ca.key.get(), false);
    ctx_ = SSL_CTX_new(TLS_server_method());
    tls_check(ctx_ != nullptr && SSL_CTX_use_certificate(ctx_, cert_.get()) == 1 &&
                  SSL_CTX_use_PrivateKey(ctx_, key_.get()) == 1,
              "server context");
    fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    tls_check(::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::listen(fd_.get(), 16) == 0 &&
                  ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0,
              "listen");
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~TlsUpstream() {
    ::shutdown(fd_.get(), SHUT_RDWR);
    thread_.join();
    SSL_CTX_free(ctx_);
  }

  uint16_t port() const { return port_; }
  int connections() const { return connections_; }
  int handshakes() const { return handshakes_; }
  std::vector<std::string> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  void run() {
    for (;;) {
      int c = ::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      connections_++;
      timeval tv{5, 0};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      SSL* ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, c);
      if (SSL_accept(ssl) == 1) {
        handshakes_++;
        std::string got;
        char buf[4096];
        while (got.find("\r\n\r\n") == std::string::npos) {
          int n = SSL_read(ssl, buf, sizeof buf);
          if (n <= 0) break;
          got.append(buf, static_cast<size_t>(n));
        }
        {
          std::lock_guard lock(mu_);
          requests_.push_back(got);
        }
        const char kAnswer[] =
            "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nsecure";
        SSL_write(ssl, kAnswer, sizeof kAnswer - 1);
        SSL_shutdown(ssl);
      }
      SSL_free(ssl);
      ::close(c);
    }
  }

  Key key_;
  Cert cert_;
  SSL_CTX* ctx_ = nullptr;
  UniqueFd fd_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<int> connections_{0};
  std::atomic<int> handshakes_{0};
  mutable std::mutex mu_;
  std::vector<std::string> requests_;
};

// TLS on 127.0.0.1 with a leaf for `name` signed by `ca`, speaking HTTP/1.1 with keep-alive: each
// request (its body by Content-Length or chunked, decoded) is recorded and answered 200 with the
// request's head as the body, until the client closes. Connections are served one at a time.
class TlsEchoUpstream {
 public:
  struct Request {
    std::string head;  // request line and fields, up to the empty line
    std::string body;  // decoded
  };

  TlsEchoUpstream(const TestCa& ca, const std::string& name) : key_(new_key()) {
    cert_ = make_cert(name, key_.get(), ca.cert.get(), ca.key.get(), false);
    ctx_ = SSL_CTX_new(TLS_server_method());
    tls_check(ctx_ != nullptr && SSL_CTX_use_certificate(ctx_, cert_.get()) == 1 &&
                  SSL_CTX_use_PrivateKey(ctx_, key_.get()) == 1,
              "server context");
    fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    tls_check(::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::listen(fd_.get(), 16) == 0 &&
                  ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0,
              "listen");
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~TlsEchoUpstream() {
    ::shutdown(fd_.get(), SHUT_RDWR);
    thread_.join();
    SSL_CTX_free(ctx_);
  }

  uint16_t port() const { return port_; }
  int connections() const { return connections_; }
  std::vector<Request> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  // Reads until `buf` holds `n` bytes past `at`; false at the end of the stream.
  static bool fill(SSL* ssl, std::string& buf, size_t need) {
    char tmp[4096];
    while (buf.size() < need) {
      int n = SSL_read(ssl, tmp, sizeof tmp);
      if (n <= 0) return false;
      buf.append(tmp, static_cast<size_t>(n));
    }
    return true;
  }
  static bool fill_until(SSL* ssl, std::string& buf, const std::string& marker, size_t& at) {
    char tmp[4096];
    for (;;) {
      at = buf.find(marker);
      if (at != std::string::npos) return true;
      int n = SSL_read(ssl, tmp, sizeof tmp);
      if (n <= 0) return false;
      buf.append(tmp, static_cast<size_t>(n));
    }
  }
  static std::string lower(std::string s) {
    for (char& c : s)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

  void serve(SSL* ssl) {
    std::string buf;
    for (;;) {
      size_t end = 0;
      if (!fill_until(ssl, buf, "\r\n\r\n", end)) return;
      Request r;
      r.head = buf.substr(0, end + 2);
      buf.erase(0, end + 4);
      const std::string h = lower(r.head);
      if (h.find("\r\ntransfer-encoding: chunked\r\n") != std::string::npos) {
        for (;;) {
          size_t eol = 0;
          if (!fill_until(ssl, buf, "\r\n", eol)) return;
          const size_t size = std::stoul(buf.substr(0, eol), nullptr, 16);
          buf.erase(0, eol + 2);
          if (size == 0) {
            if (!fill_until(ssl, buf, "\r\n", eol)) return;  // no trailers from the proxy
            buf.erase(0, eol + 2);
            break;
          }
          if (!fill(ssl, buf, size + 2)) return;
          r.body += buf.substr(0, size);
          buf.erase(0, size + 2);
        }
      } else if (size_t cl = h.find("\r\ncontent-length: "); cl != std::string::npos) {
        const size_t size = std::stoul(h.substr(cl + 18));
        if (!fill(ssl, buf, size)) return;
        r.body = buf.substr(0, size);
        buf.erase(0, size);
      }
      const bool close = h.find("\r\nconnection: close\r\n") != std::string::npos;
      const std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                                 std::to_string(r.head.size()) + "\r\n" +
                                 (close ? "Connection: close\r\n" : "") + "\r\n" + r.head;
      {
        std::lock_guard lock(mu_);
        requests_.push_back(std::move(r));
      }
      if (SSL_write(ssl, answer.data(), static_cast<int>(answer.size())) <= 0 || close) return;
    }
  }

  void run() {
    for (;;) {
      int c = ::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      connections_++;
      timeval tv{5, 0};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      SSL* ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, c);
      if (SSL_accept(ssl) == 1) {
        serve(ssl);
        SSL_shutdown(ssl);
      }
      SSL_free(ssl);
      ::close(c);
    }
  }

  Key key_;
  Cert cert_;
  SSL_CTX* ctx_ = nullptr;
  UniqueFd fd_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<int> connections_{0};
  mutable std::mutex mu_;
  std::vector<Request> requests_;
};

}  // namespace carapace::egress::testing
