// The proxy putting credentials into plain-HTTP requests (egress/README.md, Credentials): the
// secret reaches its own host only, in its slot; a sentinel anywhere else -- another allowed
// host, a CONNECT target, a SOCKS5 name -- and a key of the sandbox's own are refused with nothing
// sent; revocation and rotation take effect on the next request; the secret is in no log line,
// counter, control reply or error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/http/http_client.h"
#include "common/http/http_server.h"
#include "egress/control_routes.h"
#include "egress/credential_routes.h"
#include "tests/unit/egress/credential_proxy_util.h"
#include "tests/unit/egress/egress_proxy_fixture.h"

namespace carapace::egress {
namespace {

using testing::EgressProxyTest;
using testing::expect_no_secret;
using testing::kApiSecret;
using testing::kRotatedSecret;
using testing::LoopbackUpstream;

class CredentialProxyTest : public EgressProxyTest {
 protected:
  void SetUp() override {
    EgressProxyTest::SetUp();
    resolver_.add("api.test", {{testing::loopback()}});
    sentinel_ = testing::fresh_sentinel();
    credentials_ = testing::bearer_credentials("api.test", kApiSecret, sentinel_);
    start({"api.test", "other.test"});
  }

  std::string get(const std::string& host, uint16_t port, const std::string& target,
                  const std::string& headers = "") {
    return testing::exchange(path(), "GET http://" + host + ":" + std::to_string(port) + target +
                                         " HTTP/1.1\r\nHost: x\r\n" + headers + "\r\n");
  }
  std::string bearer(const std::string& token) { return "Authorization: Bearer " + token + "\r\n"; }

  // Everything the secret must stay out of: the log, the counters, the control view.
  void expect_secret_nowhere(std::string_view secret) {
    expect_no_secret(log_text(), secret);
    expect_no_secret(stats_to_json(proxy_->stats()).dump(), secret);
    expect_no_secret(proxy_credentials_to_json(*proxy_->credentials()).dump(), secret);
  }

  std::string sentinel_;
};

TEST_F(CredentialProxyTest, TheSentinelBecomesTheSecretOnItsOwnHost) {
  LoopbackUpstream up(LoopbackUpstream::Mode::kHttp);
  std::string r = get("api.test", up.port(), "/v1/me", bearer(sentinel_));
  EXPECT_TRUE(r.starts_with("HTTP/1.1 200")) << r;
  ASSERT_EQ(up.requests().size(), 1u);
  const std::string got = up.requests()[0];
  EXPECT_NE(got.find("Authorization: Bearer " + std::string(kApiSecret) + "\r\n"),
            std::string::npos)
      << got;
  EXPECT_EQ(got.find(sentinel_), std::string::npos) << got;
  EXPECT_TRUE(got.starts_with("GET /v1/me HTTP/1.1\r\n")) << got;
  // The response came back as it was: responses are never rewritten.
  EXPECT_NE(r.find("\r\n\r\nhello"), std::string::npos) << r;
  const std::string log =
      testing::log_once([this] { return log_text(); }, "\"decision\":\"allow\"");
  EXPECT_NE(log.find("\"credential\":\"API_TOKEN\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"decision\":\"allow\""), std::string::npos) << log;
  EXPECT_EQ(proxy_->stats().credential_injected, 1u);
  EXPECT_EQ(proxy_->stats().credential_refused, 0u);
  expect_secret_nowhere(kApiSecret);
}

TEST_F(CredentialProxyTest, TheSentinelSentToAnotherAllowedHostIsRefusedAsExfiltration) {
  LoopbackUpstream up(LoopbackUpstream::Mode::kHttp);
  for (const std::string& where : std::vector<std::string>{"/upload?token=" + sentinel_, "/x",
                                                           "/" + sentinel_.substr(14) + "/y"}) {
    SCOPED_TRACE(where);
    std::string r = where == "/x" ? get("other.test", up.port(), where, bearer(sentinel_))
                                  : get("other.test", up.port(), where);
    EXPECT_TRUE(r.starts_with("HTTP/1.1 403")) << r;
    EXPECT_NE(r.find("X-Carapace-Egress: credential_sentinel_to_other_host"), std::string::npos)
        << r;
    EXPECT_NE(r.find("exfiltration"), std::string::npos) << r;
    expect_no_secret(r, kApiSecret);
  }
  // Nothing was dialled, so nothing reached the other host.
  EXPECT_EQ(up.connections(), 0);
  const std::string log = log_text();
  EXPECT_NE(log.find("\"reason\":\"credential_sentinel_to_other_host\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"exfiltration_attempt\":true"), std::string::npos) << log;
  EXPECT_NE(log.find("\"credential\":\"API_TOKEN\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"decision\":\"deny\""), std::string::npos) << log;
  EXPECT_EQ(proxy_->stats().credential_refused, 3u);
  EXPECT_EQ(proxy_->stats().credential_injected, 0u);
  expect_secret_nowhere(kApiSecret);
}

TEST_F(CredentialProxyTest, AKeyOfTheSandboxsOwnOnTheCredentialedHostIsRefused) {
  LoopbackUpstream up(LoopbackUpstream::Mode::kHttp);
  std::string r = get("api.test", up.port(), "/v1/me", bearer("sk_live_mine"));
  EXPECT_TRUE(r.starts_with("HTTP/1.1 403")) << r;
  EXPECT_NE(r.find("credential_foreign_secret"), std::string::npos) << r;
  EXPECT_EQ(up.connections(), 0);
  EXPECT_NE(log_text().find("\"reason\":\"credential_foreign_secret\""), std::string::npos);
  EXPECT_EQ(proxy_->stats().credential_refused, 1u);
}

TEST_F(CredentialProxyTest, ADeniedHostIsRefusedByThePolicyFirst) {
  LoopbackUpstream up(LoopbackUpstream::Mode::kHttp);
  std::string r = get("denied.test", up.port(), "/", bearer(sentinel_));
  EXPECT_TRUE(r.starts_with("HTTP/1.1 403")) << r;
  EXPECT_NE(r.find("no allow rule"), std::string::npos) << r;
  EXPECT_EQ(up.connections(), 0);
}

TEST_F(CredentialProxyTest, RevokingEverythingMakesTheNextRequestFail) {
  LoopbackUpstream up(LoopbackUpstream::Mode::kHttp);
  EXPECT_TRUE(get("api.test", up.port(), "/", bearer(sentinel_)).starts_with("HTTP/1.1 200"));
  proxy_->set_credentials(ProxyCredentials{});
  std::string r = get("api.test", up.port(), "/", bearer(sentinel_));
  EXPECT_TRUE(r.starts_with("HTTP/1.1 403")) << r;
  EXPECT_NE(r.find("credential_unknown_sentinel"), std::string::npos) << r;
  EXPECT_EQ(up.requests().size(), 1u);
}

TEST_F(CredentialProxyTest, ARotatedSecretKeepsItsSentinelAndIsUsedNext) {
  LoopbackUpstream up(LoopbackUpstream::Mode::kHttp);
  EXPECT_TRUE(get("api.test", up.port(), "/", bearer(sentinel_)).starts_with("HTTP/1.1 200"));
  proxy_->set_credentials(testing::bearer_credentials("api.test", kRotatedSecret, sentinel_));
  EXPECT_TRUE(get("api.test", up.port(), "/", bearer(sentinel_)).starts_with("HTTP/1.1 200"));
  auto got = up.requests();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NE(got[0].find(kApiSecret), std::string::npos);
  EXPECT_NE(got[1].find(kRotatedSecret), std::string::npos) << got[1];
  EXPECT_EQ(got[1].find(kApiSecret), std::string::npos) << got[1];
  expect_secret_nowhere(kRotatedSecret);
}

TEST_F(CredentialProxyTest, ASentinelInAConnectTargetOrASocksNameIsRefusedBeforeAnyLookup) {
  const std::string name = sentinel_ + ".other.test";
  resolver_.add(name, {{testing::loopback()}});
  std::string r = testing::exchange(path(), "CONNECT " + name + ":443 HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 403")) << r;
  EXPECT_NE(r.find("credential_sentinel_to_other_host"), std::string::npos) << r;
  // SOCKS5: the greeting, then CONNECT to the name (ATYP 3); X'02', not allowed by the ruleset.
  std::string socks = std::string("\x05\x01\x00", 3) + std::string("\x05\x01\x00\x03", 4) +
                      static_cast<char>(name.size()) + name + std::string("\x01\xbb", 2);
  std::string s = testing::exchange(path(), socks);
  ASSERT_GE(s.size(), 4u) << s;
  EXPECT_EQ(s[2], 0x05);  // the method reply, then the §6 reply's VER
  EXPECT_EQ(s[3], 0x02);
  EXPECT_EQ(resolver_.lookups(name), 0);
  const std::string log = log_text();
  EXPECT_NE(log.find("\"protocol\":\"socks5\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"reply\":2"), std::string::npos) << log;
  EXPECT_NE(log.find("\"exfiltration_attempt\":true"), std::string::npos) << log;
  EXPECT_EQ(proxy_->stats().credential_refused, 2u);
}

// The control socket: the only way secrets reach a running proxy.
class CredentialRoutesTest : public CredentialProxyTest {
 protected:
  void SetUp() override {
    CredentialProxyTest::SetUp();
    http::Router router;
    ASSERT_TRUE(add_control_routes(router, *proxy_).ok());
    http::HttpServerOptions o;
    o.unix_path = dir_ + "/control.sock";
    auto server = http::HttpServer::start(std::move(o), std::move(router));
    ASSERT_TRUE(server.ok()) << server.error().describe();
    server_ = std::move(*server);
  }
  void TearDown() override {
    server_->stop();
    server_.reset();
    CredentialProxyTest::TearDown();
  }
  http::HttpResponse call(const std::string& method, const std::string& body = "") {
    auto r = http::http_request(dir_ + "/control.sock", method, "/credentials", body);
    EXPECT_TRUE(r.ok()) << r.error().describe();
    return r.ok() ? *r : http::HttpResponse{};
  }
  nlohmann::json entry(std::string_view secret) {
    return {{"hosts", {"api.test"}},
            {"header", "Authorization: Bearer {secret}"},
            {"secret", std::string(secret)},
            {"env", "API_TOKEN"},
            {"sentinel", sentinel_}};
  }

  std::unique_ptr<http::HttpServer> server_;
};

// GET /ca: the proxy's CA certificate for the sandbox's trust, and nothing of its key.
TEST_F(CredentialRoutesTest, GetCaGivesTheCertificateAndNeverTheKey) {
  auto r = http::http_request(dir_ + "/control.sock", "GET", "/ca", "");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->status, 200) << r->body;
  auto j = nlohmann::json::parse(r->body);
  ASSERT_TRUE(j.contains("cert_pem")) << r->body;
  EXPECT_EQ(j["cert_pem"], proxy_->ca_pem());
  EXPECT_TRUE(j["cert_pem"].get<std::string>().starts_with("-----BEGIN CERTIFICATE-----"));
  EXPECT_EQ(r->body.find("PRIVATE"), std::string::npos) << r->body;
  EXPECT_EQ(j.size(), 1u) << r->body;
}

TEST_F(CredentialRoutesTest, PutReplacesGetShowsTheRedactedViewAndBadInputNeverEchoesTheSecret) {
  LoopbackUpstream up(LoopbackUpstream::Mode::kHttp);
  http::HttpResponse put =
      call("PUT", nlohmann::json{{"credentials", {entry(kRotatedSecret)}}}.dump());
  EXPECT_EQ(put.status, 200) << put.body;
  auto view = nlohmann::json::parse(put.body);
  ASSERT_EQ(view["credentials"].size(), 1u) << put.body;
  EXPECT_EQ(view["credentials"][0]["env"], "API_TOKEN");
  EXPECT_EQ(view["credentials"][0]["secret"], "<redacted>");
  EXPECT_EQ(put.body.find(sentinel_), std::string::npos) << put.body;
  expect_no_secret(put.body, kRotatedSecret);
  http::HttpResponse got = call("GET");
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, put.body);
  // The new secret is the one used, for the sandbox's unchanged sentinel.
  EXPECT_TRUE(get("api.test", up.port(), "/", bearer(sentinel_)).starts_with("HTTP/1.1 200"));
  ASSERT_EQ(up.requests().size(), 1u);
  EXPECT_NE(up.requests()[0].find(kRotatedSecret), std::string::npos);

  // Bad input: 400, one line, no secret, and the credentials as they were.
  nlohmann::json bad_env = entry(kApiSecret);
  bad_env["env"] = "PATH";
  nlohmann::json no_sentinel = entry(kApiSecret);
  no_sentinel.erase("sentinel");
  nlohmann::json bad_sentinel = entry(kApiSecret);
  bad_sentinel["sentinel"] = std::string(kApiSecret);
  const std::string broken_json =
      "{\"credentials\": [{\"secret\": \"" + std::string(kApiSecret) + "\\q\"}]}";
  for (const std::string& body : std::vector<std::string>{
           nlohmann::json{{"credentials", {bad_env}}}.dump(),
           nlohmann::json{{"credentials", {no_sentinel}}}.dump(),
           nlohmann::json{{"credentials", {bad_sentinel}}}.dump(),
           nlohmann::json{{"credentials", {entry(kApiSecret), entry(kApiSecret)}}}.dump(),
           nlohmann::json{{"credentials", {entry(kApiSecret)}}, {"secret", 1}}.dump(), broken_json,
           nlohmann::json{{"credentials", {entry(kApiSecret)}},
                          {"upstreams", {{{"alias", "a.internal"}, {"origin", "http://x.test"}}}}}
               .dump()}) {
    http::HttpResponse r = call("PUT", body);
    EXPECT_EQ(r.status, 400) << body << " -> " << r.body;
    expect_no_secret(r.body, kApiSecret);
    const std::string message = nlohmann::json::parse(r.body)["error"]["message"];
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  EXPECT_EQ(call("GET").body, put.body);

  // An empty list revokes everything.
  put = call("PUT", R"({"credentials": []})");
  EXPECT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(nlohmann::json::parse(put.body)["credentials"].size(), 0u);
  EXPECT_TRUE(get("api.test", up.port(), "/", bearer(sentinel_)).starts_with("HTTP/1.1 403"));
  EXPECT_EQ(up.requests().size(), 1u);
  expect_secret_nowhere(kApiSecret);
  expect_secret_nowhere(kRotatedSecret);
}

}  // namespace
}  // namespace carapace::egress
