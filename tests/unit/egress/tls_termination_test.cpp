// TLS termination for the hosts with credentials (egress/README.md, Credentials): the proxy's own
// CA and its leaves, and a client that speaks HTTPS through CONNECT (or SOCKS5), trusting only
// the proxy's CA, getting its sentinel replaced by the secret at the real server -- every request
// of a kept-alive connection, bodies intact -- while a host without a credential is never
// terminated (the client sees the server's own certificate), and a foreign key is refused.
#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "egress/proxy/tls_authority.h"
#include "tests/unit/egress/credential_proxy_util.h"
#include "tests/unit/egress/egress_proxy_fixture.h"
#include "tests/unit/egress/tls_test_server.h"

namespace carapace::egress {
namespace {

using testing::EgressProxyTest;
using testing::kApiSecret;
using testing::TestCa;
using testing::TlsEchoUpstream;

// The certificate of a PEM text.
testing::Cert pem_cert(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return testing::Cert(cert);
}

std::string subject_of(X509* cert) {
  char buf[512];
  X509_NAME_oneline(X509_get_subject_name(cert), buf, sizeof buf);
  return buf;
}

// Whether `leaf` chains to `ca` (the only trusted certificate) for TLS servers.
bool verifies(X509* leaf, X509* ca) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
  const bool ok = X509_verify_cert(ctx) == 1;
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return ok;
}

TEST(TlsAuthorityTest, TheCaIsACaForSigningCertificatesOnly) {
  auto ca = TlsAuthority::create("sb-42");
  ASSERT_TRUE(ca.ok()) << ca.error().message;
  auto cert = pem_cert((*ca)->cert_pem());
  ASSERT_NE(cert, nullptr);
  EXPECT_EQ(X509_check_ca(cert.get()), 1);
  const uint32_t usage = X509_get_key_usage(cert.get());
  EXPECT_TRUE(usage & KU_KEY_CERT_SIGN);
  EXPECT_FALSE(usage & KU_DIGITAL_SIGNATURE);
  EXPECT_NE(subject_of(cert.get()).find("CN=carapace egress sb-42"), std::string::npos)
      << subject_of(cert.get());
  // Self-signed, valid now, for days rather than years.
  EXPECT_EQ(X509_check_issued(cert.get(), cert.get()), X509_V_OK);
  EXPECT_EQ(X509_verify(cert.get(), X509_get0_pubkey(cert.get())), 1);
  int days = 0;
  int secs = 0;
  ASSERT_EQ(ASN1_TIME_diff(&days, &secs, nullptr, X509_get0_notAfter(cert.get())), 1);
  EXPECT_GE(days, 2);
  EXPECT_LE(days, 8);
  // EC P-256.
  EVP_PKEY* key = X509_get0_pubkey(cert.get());
  ASSERT_NE(key, nullptr);
  EXPECT_TRUE(EVP_PKEY_is_a(key, "EC"));
  EXPECT_EQ(EVP_PKEY_get_bits(key), 256);
  // A random serial: two CAs differ.
  auto other = TlsAuthority::create("sb-42");
  ASSERT_TRUE(other.ok());
  auto other_cert = pem_cert((*other)->cert_pem());
  EXPECT_NE(ASN1_INTEGER_cmp(X509_get0_serialNumber(cert.get()),
                             X509_get0_serialNumber(other_cert.get())),
            0);
  EXPECT_EQ((*ca)->cert_pem().find("PRIVATE"), std::string::npos);
}

TEST(TlsAuthorityTest, ALeafNamesItsHostAndChainsToItsCaOnly) {
  auto ca = TlsAuthority::create("sb-1");
  auto other = TlsAuthority::create("sb-2");
  ASSERT_TRUE(ca.ok() && other.ok());
  auto server = (*ca)->server_for("api.example.com");
  ASSERT_TRUE(server.ok()) << server.error().message;
  X509* leaf = (*server)->leaf();
  EXPECT_EQ(X509_check_host(leaf, "api.example.com", 0, 0, nullptr), 1);
  EXPECT_NE(X509_check_host(leaf, "other.example.com", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ca(leaf), 0);
  EXPECT_TRUE(X509_get_extended_key_usage(leaf) & XKU_SSL_SERVER);
  EXPECT_TRUE(verifies(leaf, (*ca)->cert()));
  EXPECT_FALSE(verifies(leaf, (*other)->cert()));
  // The leaf ends no later than its CA.
  EXPECT_LE(ASN1_TIME_compare(X509_get0_notAfter(leaf), X509_get0_notAfter((*ca)->cert())), 0);
}

TEST(TlsAuthorityTest, LeavesAreCachedPerHostUpToTheBound) {
  auto ca = TlsAuthority::create("sb-1", 2);
  ASSERT_TRUE(ca.ok());
  auto a = (*ca)->server_for("a.test");
  auto a_again = (*ca)->server_for("a.test");
  ASSERT_TRUE(a.ok() && a_again.ok());
  EXPECT_EQ(a->get(), a_again->get());
  EXPECT_EQ((*ca)->cached_leaves(), 1u);
  ASSERT_TRUE((*ca)->server_for("b.test").ok());
  ASSERT_TRUE((*ca)->server_for("c.test").ok());
  EXPECT_EQ((*ca)->cached_leaves(), 2u);
  // a.test was the least recently used: dropped, so it gets a new leaf (the old one lives on
  // with whoever holds it).
  auto a_new = (*ca)->server_for("a.test");
  ASSERT_TRUE(a_new.ok());
  EXPECT_NE(a->get(), a_new->get());
  EXPECT_EQ((*ca)->cached_leaves(), 2u);
}

// A client of the proxy: CONNECT (or SOCKS5 CONNECT) to host:port, then TLS for `host` trusting
// `trust_pem` alone.
class ProxiedTls {
 public:
  ProxiedTls(const std::string& proxy_path, const std::string& host, uint16_t port,
             const std::string& trust_pem, bool socks5 = false) {
    fd_ = testing::connect_proxy(proxy_path);
    if (!fd_.valid()) {
      error_ = "no proxy";
      return;
    }
    timeval tv{5, 0};
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (!(socks5 ? connect_socks5(host, port) : connect_http(host, port))) return;
    ctx_ = SSL_CTX_new(TLS_client_method());
    X509_STORE* store = SSL_CTX_get_cert_store(ctx_);
    auto trusted = pem_cert(trust_pem);
    X509_STORE_add_cert(store, trusted.get());
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    ssl_ = SSL_new(ctx_);
    SSL_set_tlsext_host_name(ssl_, host.c_str());
    SSL_set1_host(ssl_, host.c_str());
    SSL_set_fd(ssl_, fd_.get());
    if (SSL_connect(ssl_) != 1) {
      error_ =
          std::string("handshake: ") + X509_verify_cert_error_string(SSL_get_verify_result(ssl_));
      ERR_clear_error();
      return;
    }
    ok_ = true;
  }
  ~ProxiedTls() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  }

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  // The issuer of the server's certificate.
  std::string issuer() const {
    X509* peer = SSL_get0_peer_certificate(ssl_);
    if (peer == nullptr) return "";
    char buf[512];
    X509_NAME_oneline(X509_get_issuer_name(peer), buf, sizeof buf);
    return buf;
  }
  bool send(const std::string& data) {
    return SSL_write(ssl_, data.data(), static_cast<int>(data.size())) ==
           static_cast<int>(data.size());
  }
  // One response, framed by its Content-Length ("" at the end of the stream).
  std::string response() {
    size_t end = 0;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!more()) return std::exchange(buf_, "");
    }
    std::string head = buf_.substr(0, end + 4);
    size_t length = 0;
    for (const char* name : {"Content-Length: ", "content-length: "}) {
      if (size_t at = head.find(name); at != std::string::npos)
        length = std::stoul(head.substr(at + strlen(name)));
    }
    while (buf_.size() < end + 4 + length) {
      if (!more()) break;
    }
    std::string out = buf_.substr(0, end + 4 + length);
    buf_.erase(0, out.size());
    return out;
  }

 private:
  bool more() {
    char tmp[4096];
    int n = SSL_read(ssl_, tmp, sizeof tmp);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }
  bool connect_http(const std::string& host, uint16_t port) {
    const std::string req = "CONNECT " + host + ":" + std::to_string(port) +
                            " HTTP/1.1\r\nHost: " + host + ":" + std::to_string(port) + "\r\n\r\n";
    ::send(fd_.get(), req.data(), req.size(), MSG_NOSIGNAL);
    std::string got;
    char c;
    while (got.find("\r\n\r\n") == std::string::npos && ::recv(fd_.get(), &c, 1, 0) == 1)
      got += c;
    if (!got.starts_with("HTTP/1.1 200")) {
      error_ = "CONNECT answered: " + got;
      return false;
    }
    return true;
  }
  bool connect_socks5(const std::string& host, uint16_t port) {
    std::string req = std::string("\x05\x01\x00", 3) + std::string("\x05\x01\x00\x03", 4) +
                      static_cast<char>(host.size()) + host + static_cast<char>(port >> 8) +
                      static_cast<char>(port & 0xff);
    ::send(fd_.get(), req.data(), req.size(), MSG_NOSIGNAL);
    char got[12];
    size_t n = 0;
    while (n < sizeof got) {
      ssize_t r = ::recv(fd_.get(), got + n, sizeof got - n, 0);
      if (r <= 0) break;
      n += static_cast<size_t>(r);
    }
    if (n != sizeof got || got[3] != 0x00) {
      error_ = "SOCKS5 reply " + std::to_string(n > 3 ? got[3] : -1);
      return false;
    }
    return true;
  }

  UniqueFd fd_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  std::string buf_;
  std::string error_;
  bool ok_ = false;
};

class TlsTerminationTest : public EgressProxyTest {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);  // a refused client's writes fail rather than kill the test
    EgressProxyTest::SetUp();
    ca_file_ = dir_ + "/ca.pem";
    ca_.write_pem(ca_file_);
    sentinel_ = testing::fresh_sentinel();
    credentials_ = testing::bearer_credentials("allowed.test", kApiSecret, sentinel_);
    start({"allowed.test", "other.test"});
  }
  void TearDown() override {
    ::unlink(ca_file_.c_str());
    EgressProxyTest::TearDown();
  }
  std::string get(const std::string& path, const std::string& auth, const std::string& host) {
    return "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: " + auth + "\r\n\r\n";
  }

  TestCa ca_{"carapace test CA"};
  std::string sentinel_;
};

TEST_F(TlsTerminationTest, HttpsThroughConnectGetsTheSecretAtTheRealHost) {
  TlsEchoUpstream server(ca_, "allowed.test");
  std::string r;
  {
    ProxiedTls client(path(), "allowed.test", server.port(), proxy_->ca_pem());
    ASSERT_TRUE(client.ok()) << client.error() << "\n" << log_text();
    EXPECT_NE(client.issuer().find("carapace egress sb-test"), std::string::npos)
        << client.issuer();
    ASSERT_TRUE(client.send(get("/v1/me?x=1", "Bearer " + sentinel_, "allowed.test")));
    r = client.response();
  }  // closed: the connection's line is written
  EXPECT_TRUE(r.starts_with("HTTP/1.1 200")) << r;
  ASSERT_EQ(server.requests().size(), 1u);
  const std::string head = server.requests()[0].head;
  EXPECT_TRUE(head.starts_with("GET /v1/me?x=1 HTTP/1.1\r\n")) << head;
  EXPECT_NE(head.find("Authorization: Bearer " + std::string(kApiSecret) + "\r\n"),
            std::string::npos)
      << head;
  EXPECT_NE(head.find("Host: allowed.test:" + std::to_string(server.port()) + "\r\n"),
            std::string::npos)
      << head;
  EXPECT_EQ(head.find(sentinel_), std::string::npos) << head;
  // The response comes back as the server sent it: the secret is in it only because this test
  // server echoes the head it got.
  EXPECT_NE(r.find(std::string(kApiSecret)), std::string::npos) << r;
  EXPECT_EQ(proxy_->stats().credential_injected, 1u);
  const std::string log =
      testing::log_once([this] { return log_text(); }, "\"decision\":\"allow\"");
  EXPECT_NE(log.find("\"tls_terminated\":true"), std::string::npos) << log;
  EXPECT_NE(log.find("\"credential\":\"API_TOKEN\""), std::string::npos) << log;
  EXPECT_EQ(log.find(std::string(kApiSecret)), std::string::npos) << log;
}

TEST_F(TlsTerminationTest, SocksFiveConnectIsTerminatedToo) {
  TlsEchoUpstream server(ca_, "allowed.test");
  ProxiedTls client(path(), "allowed.test", server.port(), proxy_->ca_pem(), /*socks5=*/true);
  ASSERT_TRUE(client.ok()) << client.error();
  ASSERT_TRUE(client.send(get("/", "Bearer " + sentinel_, "allowed.test")));
  EXPECT_TRUE(client.response().starts_with("HTTP/1.1 200"));
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_NE(server.requests()[0].head.find(std::string(kApiSecret)), std::string::npos);
}

TEST_F(TlsTerminationTest, EveryRequestOfAKeptAliveConnectionIsRewritten) {
  TlsEchoUpstream server(ca_, "allowed.test");
  ProxiedTls client(path(), "allowed.test", server.port(), proxy_->ca_pem());
  ASSERT_TRUE(client.ok()) << client.error();
  ASSERT_TRUE(client.send(get("/one", "Bearer " + sentinel_, "allowed.test")));
  EXPECT_TRUE(client.response().starts_with("HTTP/1.1 200"));
  ASSERT_TRUE(client.send(get("/two", "Bearer " + sentinel_, "allowed.test")));
  EXPECT_TRUE(client.response().starts_with("HTTP/1.1 200"));
  // A third one carrying its own key instead is refused on the same connection.
  ASSERT_TRUE(client.send(get("/three", "Bearer sk_my_own_key_123", "allowed.test")));
  const std::string refused = client.response();
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 403")) << refused;
  auto got = server.requests();
  ASSERT_EQ(got.size(), 2u);
  for (const auto& r : got) {
    EXPECT_NE(r.head.find("Authorization: Bearer " + std::string(kApiSecret)), std::string::npos)
        << r.head;
    EXPECT_EQ(r.head.find(sentinel_), std::string::npos) << r.head;
  }
  EXPECT_TRUE(got[1].head.starts_with("GET /two ")) << got[1].head;
  EXPECT_EQ(server.connections(), 1);  // one origin connection carried both
  EXPECT_EQ(proxy_->stats().credential_injected, 2u);
}

TEST_F(TlsTerminationTest, BodiesAreSentOnIntactInTheirFraming) {
  TlsEchoUpstream server(ca_, "allowed.test");
  ProxiedTls client(path(), "allowed.test", server.port(), proxy_->ca_pem());
  ASSERT_TRUE(client.ok()) << client.error();
  const std::string chunked =
      "POST /upload HTTP/1.1\r\nHost: allowed.test\r\nAuthorization: Bearer " + sentinel_ +
      "\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n";
  ASSERT_TRUE(client.send(chunked));
  EXPECT_TRUE(client.response().starts_with("HTTP/1.1 200"));
  const std::string sized = "PUT /put HTTP/1.1\r\nHost: allowed.test\r\nAuthorization: Bearer " +
                            sentinel_ + "\r\nContent-Length: 11\r\n\r\nhello again";
  ASSERT_TRUE(client.send(sized));
  EXPECT_TRUE(client.response().starts_with("HTTP/1.1 200"));
  auto got = server.requests();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].body, "hello, world");
  EXPECT_NE(got[0].head.find("Transfer-Encoding: chunked"), std::string::npos) << got[0].head;
  EXPECT_EQ(got[1].body, "hello again");
  EXPECT_TRUE(got[1].head.starts_with("PUT /put ")) << got[1].head;
  for (const auto& r : got)
    EXPECT_NE(r.head.find(std::string(kApiSecret)), std::string::npos) << r.head;
}

TEST_F(TlsTerminationTest, AForeignKeyIsRefusedAndNothingReachesTheServer) {
  TlsEchoUpstream server(ca_, "allowed.test");
  ProxiedTls client(path(), "allowed.test", server.port(), proxy_->ca_pem());
  ASSERT_TRUE(client.ok()) << client.error();
  ASSERT_TRUE(client.send(get("/", "Bearer sk_my_own_key_123", "allowed.test")));
  const std::string r = client.response();
  EXPECT_TRUE(r.starts_with("HTTP/1.1 403")) << r;
  EXPECT_NE(r.find("X-Carapace-Egress: credential_foreign_secret"), std::string::npos) << r;
  EXPECT_TRUE(server.requests().empty());
  EXPECT_EQ(proxy_->stats().credential_refused, 1u);
  const std::string log = testing::log_once([this] { return log_text(); }, "credential_foreign");
  EXPECT_NE(log.find("\"reason\":\"credential_foreign_secret\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"decision\":\"deny\""), std::string::npos) << log;
}

TEST_F(TlsTerminationTest, AnotherHostsSentinelInsideTheTunnelIsRefusedAsExfiltration) {
  // A second credential's sentinel sent to allowed.test, whose own slot holds the right one.
  std::vector<CredentialSpec> specs;
  specs.push_back(testing::spec_of({{"hosts", {"allowed.test"}},
                                    {"header", "Authorization: Bearer {secret}"},
                                    {"secret", std::string(kApiSecret)},
                                    {"env", "API_TOKEN"}}));
  specs.push_back(testing::spec_of({{"hosts", {"elsewhere.test"}},
                                    {"header", "X-Key: {secret}"},
                                    {"secret", "sk_other_secret_ABCDEFGHIJ"},
                                    {"env", "OTHER_KEY"}}));
  const std::string other = testing::fresh_sentinel();
  auto set = CredentialSet::with_sentinels(std::move(specs), {sentinel_, other});
  ASSERT_TRUE(set.ok()) << set.error().message;
  proxy_->set_credentials(ProxyCredentials{std::move(*set), {}});
  TlsEchoUpstream server(ca_, "allowed.test");
  ProxiedTls client(path(), "allowed.test", server.port(), proxy_->ca_pem());
  ASSERT_TRUE(client.ok()) << client.error();
  ASSERT_TRUE(client.send("GET / HTTP/1.1\r\nHost: allowed.test\r\nX-Key: " + other + "\r\n\r\n"));
  EXPECT_TRUE(client.response().starts_with("HTTP/1.1 403"));
  EXPECT_TRUE(server.requests().empty());
  const std::string log =
      testing::log_once([this] { return log_text(); }, "credential_sentinel_to_other_host");
  EXPECT_NE(log.find("\"exfiltration_attempt\":true"), std::string::npos) << log;
}

TEST_F(TlsTerminationTest, AHostWithoutACredentialIsNeverTerminated) {
  TlsEchoUpstream server(ca_, "other.test");
  // The client trusts the test CA only, as it would the public ones: the tunnel reaches the
  // server itself, whose certificate it sees.
  std::string test_ca_pem;
  {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(bio, ca_.cert.get());
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    test_ca_pem.assign(data, static_cast<size_t>(n));
    BIO_free(bio);
  }
  {
    ProxiedTls client(path(), "other.test", server.port(), test_ca_pem);
    ASSERT_TRUE(client.ok()) << client.error();
    EXPECT_NE(client.issuer().find("carapace test CA"), std::string::npos) << client.issuer();
    // A sentinel inside it is passed untouched: the proxy cannot see it, and it is worthless
    // there.
    ASSERT_TRUE(client.send(get("/", "Bearer " + sentinel_, "other.test")));
    EXPECT_TRUE(client.response().starts_with("HTTP/1.1 200"));
  }
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_NE(server.requests()[0].head.find(sentinel_), std::string::npos);
  EXPECT_EQ(server.requests()[0].head.find(std::string(kApiSecret)), std::string::npos);
  EXPECT_EQ(proxy_->authority()->cached_leaves(), 0u);  // no leaf was made for other.test
  // And a client that would trust only the proxy's CA fails there: no leaf for other.test.
  ProxiedTls fooled(path(), "other.test", server.port(), proxy_->ca_pem());
  EXPECT_FALSE(fooled.ok());
  EXPECT_EQ(proxy_->authority()->cached_leaves(), 0u);
}

TEST_F(TlsTerminationTest, AClientThatDoesNotTrustTheCaFailsItsHandshakeLogged) {
  TlsEchoUpstream server(ca_, "allowed.test");
  auto stranger = TlsAuthority::create("someone else");
  ASSERT_TRUE(stranger.ok());
  ProxiedTls client(path(), "allowed.test", server.port(), (*stranger)->cert_pem());
  EXPECT_FALSE(client.ok());
  EXPECT_TRUE(server.requests().empty());
  const std::string log = testing::log_once([this] { return log_text(); }, "client_tls_failed");
  EXPECT_NE(log.find("\"end\":\"client_tls_failed\""), std::string::npos) << log;
  EXPECT_NE(log.find("TLS with the client"), std::string::npos) << log;
}

TEST_F(TlsTerminationTest, AnOriginThatDoesNotVerifyGetsNothingAndTheConnectA502) {
  TestCa wrong("not the trusted CA");
  TlsEchoUpstream server(wrong, "allowed.test");
  const std::string r = testing::exchange(
      path(), "CONNECT allowed.test:" + std::to_string(server.port()) + " HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 502")) << r;
  EXPECT_NE(r.find("certificate verify failed"), std::string::npos) << r;
  EXPECT_TRUE(server.requests().empty());
}

}  // namespace
}  // namespace carapace::egress
