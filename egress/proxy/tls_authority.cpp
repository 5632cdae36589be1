#include "egress/proxy/tls_authority.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace carapace::egress {
namespace {

constexpr long kSkewSeconds = 3600;

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;
struct CtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};

Error tls_error(const std::string& what) {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  std::string out = "TLS authority: " + what;
  if (e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += std::string(": ") + buf;
  }
  return make_error(out);
}

// A positive random 128-bit serial (RFC 5280 4.1.2.2: at most 20 octets, positive).
bool set_random_serial(X509* cert) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return false;
  bytes[0] &= 0x7f;
  bytes[0] |= 0x01;  // never zero, never a short encoding
  BIGNUM* bn = BN_bin2bn(bytes, sizeof bytes, nullptr);
  if (bn == nullptr) return false;
  const bool ok = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != nullptr;
  BN_free(bn);
  return ok;
}

// An extension from OpenSSL's configuration syntax; only fixed strings of this file go here,
// never a host name (which goes in as a GENERAL_NAME, below).
bool add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

bool add_dns_san(X509* cert, const std::string& host) {
  GENERAL_NAMES* names = sk_GENERAL_NAME_new_null();
  GENERAL_NAME* name = GENERAL_NAME_new();
  ASN1_IA5STRING* ia5 = ASN1_IA5STRING_new();
  bool ok = names != nullptr && name != nullptr && ia5 != nullptr &&
            ASN1_STRING_set(ia5, host.data(), static_cast<int>(host.size())) == 1;
  if (ok) {
    GENERAL_NAME_set0_value(name, GEN_DNS, ia5);
    ia5 = nullptr;
    ok = sk_GENERAL_NAME_push(names, name) > 0;
    if (ok) name = nullptr;
  }
  ok = ok && X509_add1_ext_i2d(cert, NID_subject_alt_name, names, 1, X509V3_ADD_DEFAULT) == 1;
  ASN1_IA5STRING_free(ia5);
  GENERAL_NAME_free(name);
  GENERAL_NAMES_free(names);
  return ok;
}

bool set_cn(X509_NAME* name, const std::string& cn) {
  // A CN is at most 64 characters (RFC 5280 upper bound); the SAN carries the real name.
  const std::string text = cn.substr(0, 64);
  return X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                    reinterpret_cast<const unsigned char*>(text.c_str()), -1, -1,
                                    0) == 1;
}

}  // namespace

TlsServerContext::~TlsServerContext() {
  SSL_CTX_free(ctx_);
  X509_free(leaf_);
}

Result<std::unique_ptr<TlsAuthority>> TlsAuthority::create(const std::string& sandbox,
                                                           size_t max_leaves) {
  ERR_clear_error();
  Key key(EVP_EC_gen("P-256"));
  if (!key) return tls_error("cannot make the CA key");
  Cert cert(X509_new());
  if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1 ||
      !set_random_serial(cert.get()) ||
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), -kSkewSeconds) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()),
                      std::chrono::duration_cast<std::chrono::seconds>(kValidity).count()) ==
          nullptr ||
      X509_set_pubkey(cert.get(), key.get()) != 1)
    return tls_error("cannot make the CA certificate");
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (!set_cn(name, "carapace egress " + sandbox) ||
      X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>("carapace"), -1, -1,
                                 0) != 1 ||
      X509_set_issuer_name(cert.get(), name) != 1)
    return tls_error("cannot name the CA");
  // pathlen 0: the CA signs leaves only, never another CA.
  if (!add_ext(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      !add_ext(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign") ||
      !add_ext(cert.get(), cert.get(), NID_subject_key_identifier, "hash"))
    return tls_error("cannot add the CA's extensions");
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) <= 0) return tls_error("cannot sign the CA");
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr || PEM_write_bio_X509(bio, cert.get()) != 1) {
    BIO_free(bio);
    return tls_error("cannot write the CA as PEM");
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(n));
  BIO_free(bio);
  std::unique_ptr<TlsAuthority> out(
      new TlsAuthority(key.release(), cert.release(), max_leaves == 0 ? 1 : max_leaves));
  out->cert_pem_ = std::move(pem);
  return out;
}

TlsAuthority::~TlsAuthority() {
  leaves_.clear();
  X509_free(cert_);
  EVP_PKEY_free(key_);  // OpenSSL clears the private key's memory as it frees it
}

Result<std::shared_ptr<const TlsServerContext>> TlsAuthority::make_server(
    const std::string& host) const {
  ERR_clear_error();
  if (host.empty() || host.size() > 253) return make_error("TLS authority: no name for a leaf");
  Key key(EVP_EC_gen("P-256"));
  if (!key) return tls_error("cannot make a leaf key");
  Cert leaf(X509_new());
  if (!leaf || X509_set_version(leaf.get(), X509_VERSION_3) != 1 ||
      !set_random_serial(leaf.get()) ||
      X509_gmtime_adj(X509_getm_notBefore(leaf.get()), -kSkewSeconds) == nullptr ||
      X509_set1_notAfter(leaf.get(), X509_get0_notAfter(cert_)) != 1 ||
      X509_set_pubkey(leaf.get(), key.get()) != 1 ||
      !set_cn(X509_get_subject_name(leaf.get()), host) ||
      X509_set_issuer_name(leaf.get(), X509_get_subject_name(cert_)) != 1)
    return tls_error("cannot make a leaf certificate");
  if (!add_ext(leaf.get(), cert_, NID_basic_constraints, "critical,CA:FALSE") ||
      !add_ext(leaf.get(), cert_, NID_key_usage, "critical,digitalSignature") ||
      !add_ext(leaf.get(), cert_, NID_ext_key_usage, "serverAuth") ||
      !add_ext(leaf.get(), cert_, NID_subject_key_identifier, "hash") ||
      !add_ext(leaf.get(), cert_, NID_authority_key_identifier, "keyid:always") ||
      !add_dns_san(leaf.get(), host))
    return tls_error("cannot add a leaf's extensions");
  if (X509_sign(leaf.get(), key_, EVP_sha256()) <= 0) return tls_error("cannot sign a leaf");

  std::unique_ptr<SSL_CTX, CtxFree> owned(SSL_CTX_new(TLS_server_method()));
  SSL_CTX* ctx = owned.get();
  if (ctx == nullptr) return tls_error("SSL_CTX_new failed");
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_use_certificate(ctx, leaf.get()) != 1 ||
      SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 || SSL_CTX_check_private_key(ctx) != 1 ||
      SSL_CTX_add1_chain_cert(ctx, cert_) != 1)
    return tls_error("cannot set up a leaf's server context");
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                               SSL_OP_IGNORE_UNEXPECTED_EOF);
  return std::shared_ptr<const TlsServerContext>(
      new TlsServerContext(owned.release(), leaf.release()));
}

Result<std::shared_ptr<const TlsServerContext>> TlsAuthority::server_for(const std::string& host) {
  {
    std::lock_guard lock(mu_);
    for (auto it = leaves_.begin(); it != leaves_.end(); ++it) {
      if (it->first == host) {
        leaves_.splice(leaves_.begin(), leaves_, it);
        return leaves_.front().second;
      }
    }
  }
  auto made = TRY(make_server(host));
  std::lock_guard lock(mu_);
  // Another connection may have made one meanwhile: either serves.
  leaves_.emplace_front(host, made);
  for (auto it = std::next(leaves_.begin()); it != leaves_.end(); ++it) {
    if (it->first == host) {
      leaves_.erase(it);
      break;
    }
  }
  while (leaves_.size() > max_leaves_)
    leaves_.pop_back();
  return made;
}

size_t TlsAuthority::cached_leaves() const {
  std::lock_guard lock(mu_);
  return leaves_.size();
}

}  // namespace carapace::egress
