// The proxy's own certificate authority, for terminating TLS to the hosts that have credentials
// (egress/README.md, Credentials, TLS termination): an EC P-256 key and a self-signed CA
// certificate made when the proxy starts, and a leaf certificate per host name, made on first use
// and kept in a bounded cache. The CA key lives in this object only: it is never written, never
// sent, and ends with the proxy. Only the certificate (cert_pem) leaves, for the sandbox to trust.
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "common/base/result.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct evp_pkey_st EVP_PKEY;
typedef struct x509_st X509;

namespace carapace::egress {

// A TLS server context for one host: its leaf (with the CA as the chain) and the leaf's key.
class TlsServerContext {
 public:
  ~TlsServerContext();
  TlsServerContext(const TlsServerContext&) = delete;
  TlsServerContext& operator=(const TlsServerContext&) = delete;

  SSL_CTX* get() const { return ctx_; }
  X509* leaf() const { return leaf_; }  // owned here

 private:
  friend class TlsAuthority;
  TlsServerContext(SSL_CTX* ctx, X509* leaf) : ctx_(ctx), leaf_(leaf) {}
  SSL_CTX* ctx_;
  X509* leaf_;
};

class TlsAuthority {
 public:
  static constexpr std::chrono::hours kValidity{7 * 24};
  static constexpr size_t kMaxLeaves = 64;

  // A new key and CA certificate, subject CN "carapace egress <sandbox>", valid from an hour ago
  // (clock skew) for kValidity, with a random 128-bit serial.
  static Result<std::unique_ptr<TlsAuthority>> create(const std::string& sandbox,
                                                      size_t max_leaves = kMaxLeaves);
  ~TlsAuthority();
  TlsAuthority(const TlsAuthority&) = delete;
  TlsAuthority& operator=(const TlsAuthority&) = delete;

  // The CA certificate, PEM.
  const std::string& cert_pem() const { return cert_pem_; }
  X509* cert() const { return cert_; }

  // The server context for `host` (a normalised DNS name): the cached one, or a new leaf (SAN
  // dNSName = host, serverAuth, valid until the CA is) signed by the CA. The least recently used
  // past max_leaves is dropped (connections using it keep their reference).
  Result<std::shared_ptr<const TlsServerContext>> server_for(const std::string& host);
  size_t cached_leaves() const;

 private:
  TlsAuthority(EVP_PKEY* key, X509* cert, size_t max_leaves)
      : key_(key), cert_(cert), max_leaves_(max_leaves) {}
  Result<std::shared_ptr<const TlsServerContext>> make_server(const std::string& host) const;

  EVP_PKEY* key_;
  X509* cert_;
  std::string cert_pem_;
  const size_t max_leaves_;
  mutable std::mutex mu_;
  // Most recently used first.
  std::list<std::pair<std::string, std::shared_ptr<const TlsServerContext>>> leaves_;
};

}  // namespace carapace::egress
