// Plain HTTP in, verified TLS out (egress/README.md, Credentials, Upstreams): a sandbox's request
// to an alias reaches the origin over TLS with the secret in, under the origin's policy; a server
// whose certificate does not verify for the origin's name (another name, an untrusted CA) gets
// nothing and the client a 502. The CA and certificates are made by the test.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "tests/unit/egress/credential_proxy_util.h"
#include "tests/unit/egress/egress_proxy_fixture.h"
#include "tests/unit/egress/tls_test_server.h"

namespace carapace::egress {
namespace {

using testing::EgressProxyTest;
using testing::expect_no_secret;
using testing::kApiSecret;
using testing::TestCa;
using testing::TlsUpstream;

constexpr char kAlias[] = "api-alias.carapace.internal";

class TlsOriginTest : public EgressProxyTest {
 protected:
  void SetUp() override {
    EgressProxyTest::SetUp();
    resolver_.add("origin.test", {{testing::loopback()}});
    ca_file_ = dir_ + "/ca.pem";
    ca_.write_pem(ca_file_);
    sentinel_ = testing::fresh_sentinel();
  }
  void TearDown() override {
    ::unlink(ca_file_.c_str());
    EgressProxyTest::TearDown();
  }

  // The alias for https://origin.test:`port`, and the credential for origin.test.
  void start_for(uint16_t port, std::vector<std::string> allow = {"origin.test"}) {
    credentials_ = testing::bearer_credentials("origin.test", kApiSecret, sentinel_);
    auto alias = origin_alias_from_json(
        {{"alias", kAlias}, {"origin", "https://origin.test:" + std::to_string(port)}}, "u");
    ASSERT_TRUE(alias.ok()) << alias.error().message;
    credentials_.origins.push_back(*alias);
    start(std::move(allow));
  }
  std::string get_alias(const std::string& target) {
    return testing::exchange(path(), "GET http://" + std::string(kAlias) + target +
                                         " HTTP/1.1\r\nHost: whatever\r\n"
                                         "Authorization: Bearer " +
                                         sentinel_ + "\r\n\r\n");
  }

  TestCa ca_{"carapace test CA"};
  std::string sentinel_;
};

TEST_F(TlsOriginTest, TheAliasReachesTheOriginOverVerifiedTlsWithTheSecretIn) {
  TlsUpstream origin(ca_, "origin.test");
  start_for(origin.port());
  std::string r = get_alias("/v1/repos?page=2");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 200")) << r;
  EXPECT_NE(r.find("\r\n\r\nsecure"), std::string::npos) << r;
  ASSERT_EQ(origin.requests().size(), 1u);
  const std::string got = origin.requests()[0];
  EXPECT_TRUE(got.starts_with("GET /v1/repos?page=2 HTTP/1.1\r\n")) << got;
  EXPECT_NE(got.find("Host: origin.test:" + std::to_string(origin.port()) + "\r\n"),
            std::string::npos)
      << got;
  EXPECT_NE(got.find("Authorization: Bearer " + std::string(kApiSecret) + "\r\n"),
            std::string::npos)
      << got;
  EXPECT_EQ(got.find(sentinel_), std::string::npos) << got;
  EXPECT_EQ(got.find(kAlias), std::string::npos) << got;
  const std::string log =
      testing::log_once([this] { return log_text(); }, "\"decision\":\"allow\"");
  EXPECT_NE(log.find("\"alias\":\"api-alias.carapace.internal\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"host\":\"origin.test\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"credential\":\"API_TOKEN\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"decision\":\"allow\""), std::string::npos) << log;
  expect_no_secret(log, kApiSecret);
  EXPECT_EQ(proxy_->stats().credential_injected, 1u);
}

TEST_F(TlsOriginTest, ACertificateForAnotherNameGetsNothingAndTheClientA502) {
  TlsUpstream origin(ca_, "impostor.test");
  start_for(origin.port());
  std::string r = get_alias("/");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 502")) << r;
  EXPECT_NE(r.find("certificate verify failed"), std::string::npos) << r;
  EXPECT_EQ(origin.requests().size(), 0u);
  EXPECT_GE(origin.connections(), 1);  // it was dialled; the handshake is what failed
  const std::string log = log_text();
  EXPECT_NE(log.find("certificate verify failed"), std::string::npos) << log;
  EXPECT_NE(log.find("\"status\":502"), std::string::npos) << log;
  expect_no_secret(log, kApiSecret);
  EXPECT_EQ(proxy_->stats().credential_injected, 0u);
}

TEST_F(TlsOriginTest, ACertificateFromAnUntrustedCaGetsNothing) {
  TestCa stranger("another CA");
  TlsUpstream origin(stranger, "origin.test");
  start_for(origin.port());
  std::string r = get_alias("/");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 502")) << r;
  EXPECT_NE(r.find("certificate verify failed"), std::string::npos) << r;
  EXPECT_EQ(origin.requests().size(), 0u);
}

TEST_F(TlsOriginTest, ThePolicyIsTheOriginsAndTheAliasNeedNotBeAllowed) {
  TlsUpstream origin(ca_, "origin.test");
  // The alias allowed but not the origin: refused, nothing dialled.
  start_for(origin.port(), {kAlias});
  std::string r = get_alias("/");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 403")) << r;
  EXPECT_NE(r.find("no allow rule"), std::string::npos) << r;
  EXPECT_EQ(origin.connections(), 0);
}

TEST_F(TlsOriginTest, AnAliasIsPlainHttpOnPort80AndNotACONNECTTarget) {
  TlsUpstream origin(ca_, "origin.test");
  start_for(origin.port());
  std::string r =
      testing::exchange(path(), "GET http://" + std::string(kAlias) + ":8080/ HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 400")) << r;
  EXPECT_NE(r.find("plain http on port 80"), std::string::npos) << r;
  // CONNECT takes the ordinary path: the alias is no allowed name of its own.
  r = testing::exchange(path(), "CONNECT " + std::string(kAlias) + ":443 HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 403")) << r;
  EXPECT_NE(r.find("no allow rule"), std::string::npos) << r;
  EXPECT_EQ(origin.connections(), 0);
}

TEST_F(TlsOriginTest, TheSentinelOnTheAliasToAnotherHostsOriginIsRefused) {
  TlsUpstream origin(ca_, "origin.test");
  start_for(origin.port());
  // The credential is for origin.test; a query carrying its sentinel elsewhere in the request
  // is refused as on any other host (outside its slot), and nothing reaches the origin.
  std::string r = testing::exchange(
      path(), "GET http://" + std::string(kAlias) + "/?leak=" + sentinel_ + " HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 403")) << r;
  EXPECT_NE(r.find("credential_sentinel_outside_slot"), std::string::npos) << r;
  EXPECT_EQ(origin.connections(), 0);
}

TEST(OriginAliasTest, OriginsAreHttpsHostNamesAndAliasesAreNames) {
  for (const char* bad :
       {"http://api.test", "https://", "https://1.2.3.4", "https://a.test/path", "https://u@a.test",
        "https://a.test:0", "https://a.test:99999", "https://[::1]"}) {
    EXPECT_FALSE(origin_alias_from_json({{"alias", "x.internal"}, {"origin", bad}}, "u").ok())
        << bad;
  }
  EXPECT_FALSE(origin_alias_from_json({{"alias", "bad name"}, {"origin", "https://a.test"}}, "u"));
  EXPECT_FALSE(origin_alias_from_json(
      {{"alias", "x.internal"}, {"origin", "https://a.test"}, {"k", 1}}, "u"));
  auto ok = origin_alias_from_json({{"alias", "X.Internal"}, {"origin", "https://A.test"}}, "u");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->alias, "x.internal");
  EXPECT_EQ(ok->host, "a.test");
  EXPECT_EQ(ok->port, 443);
  EXPECT_EQ(ok->origin_text(), "https://a.test");
}

}  // namespace
}  // namespace carapace::egress
