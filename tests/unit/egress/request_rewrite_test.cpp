// rewrite_request and refuse_sentinel_in: the sentinel becomes the secret only in its slot and
// only on its credential's hosts (wildcards and ports included); a sentinel sent anywhere else,
// even to an allowed host, in any spelling, is refused as an exfiltration attempt
// (docs/security.md #46); a credentialed slot with the sandbox's own key is refused (#47); no
// refusal message holds a secret (#48). Responses have no API here at all: they are never
// rewritten, so there is nothing to test but that absence.
#include "egress/credentials/request_rewrite.h"

#include <gtest/gtest.h>

#include <string>

#include "egress/credentials/ascii_text.h"
#include "egress/credentials/sentinel.h"
#include "tests/unit/egress/credential_test_util.h"

namespace carapace::egress {
namespace {

using Kind = RewriteDecision::Kind;
using Reason = CredentialRefusalReason;
using testing::expect_no_secret;
using testing::kExampleSecret;
using testing::kGithubSecret;

class RequestRewriteTest : public ::testing::Test {
 protected:
  RequestRewriteTest() : set_(testing::github_and_example()) {
    github_ = set_.find("GITHUB_TOKEN")->sentinel;
    example_ = set_.find("EXAMPLE_KEY")->sentinel;
  }

  static Destination dest(std::string_view host, uint16_t port) {
    auto d = parse_destination(host, port);
    EXPECT_TRUE(d) << host;
    return d ? d.value() : Destination{};
  }

  RewriteDecision decide(std::string_view host, uint16_t port, const RequestHead& head) {
    RewriteDecision d = rewrite_request(set_, dest(host, port), head);
    // Whatever the answer, nothing a log would get holds a secret.
    expect_no_secret(d.refusal.message, kGithubSecret);
    expect_no_secret(d.refusal.message, kExampleSecret);
    EXPECT_EQ(d.refusal.message.find('\n'), std::string::npos);
    for (const std::string& env : d.used) {
      expect_no_secret(env, kGithubSecret);
      expect_no_secret(env, kExampleSecret);
    }
    if (d.kind == Kind::kRefused) {
      EXPECT_FALSE(d.refusal.message.empty());
    }
    return d;
  }

  Reason refused(std::string_view host, uint16_t port, const RequestHead& head) {
    RewriteDecision d = decide(host, port, head);
    EXPECT_EQ(d.kind, Kind::kRefused) << host << " " << head.target;
    return d.refusal.reason;
  }

  RequestHead bearer(const std::string& token, std::string target = "/user") const {
    return RequestHead{
        std::move(target),
        {{"Host", "api.github.com"}, {"Authorization", "Bearer " + token}, {"Accept", "*/*"}}};
  }

  static RequestHead get(std::string target, HeaderFields headers = {{"Accept", "*/*"}}) {
    return RequestHead{std::move(target), std::move(headers)};
  }

  std::string hex(const std::string& sentinel) const { return sentinel.substr(14); }

  CredentialSet set_;
  std::string github_;
  std::string example_;
};

TEST_F(RequestRewriteTest, SecurityCheck46_TheHeaderSentinelBecomesTheSecretOnItsHost) {
  for (uint16_t port : {uint16_t{443}, uint16_t{80}}) {
    RewriteDecision d = decide("api.github.com", port, bearer(github_));
    ASSERT_EQ(d.kind, Kind::kRewritten) << d.refusal.message;
    EXPECT_EQ(d.used, std::vector<std::string>{"GITHUB_TOKEN"});
    EXPECT_EQ(d.head.target, "/user");
    const HeaderFields want = {{"Host", "api.github.com"},
                               {"Authorization", "Bearer " + std::string(kGithubSecret)},
                               {"Accept", "*/*"}};
    EXPECT_EQ(d.head.headers, want);
  }
  // Names compare case-insensitively and keep their spelling; OWS around the value is allowed.
  RewriteDecision d =
      decide("API.GitHub.com.", 443, get("/", {{"aUtHoRiZaTiOn", " \tBearer " + github_ + " "}}));
  ASSERT_EQ(d.kind, Kind::kRewritten) << d.refusal.message;
  EXPECT_EQ(d.head.headers[0].first, "aUtHoRiZaTiOn");
  EXPECT_EQ(d.head.headers[0].second, "Bearer " + std::string(kGithubSecret));
}

TEST_F(RequestRewriteTest, SecurityCheck46_TheQuerySentinelBecomesThePercentEncodedSecret) {
  const std::string encoded = "ex-key%2FWith%2BReserved%3DChars%26more";
  RewriteDecision d = decide("www.example.com", 443,
                             get("/v1/items?a=1&api_key=" + example_ + ";b=2&api_key=" + example_));
  ASSERT_EQ(d.kind, Kind::kRewritten) << d.refusal.message;
  EXPECT_EQ(d.head.target, "/v1/items?a=1&api_key=" + encoded + ";b=2&api_key=" + encoded);
  EXPECT_EQ(d.used, std::vector<std::string>{"EXAMPLE_KEY"});
  EXPECT_EQ(d.head.headers, (HeaderFields{{"Accept", "*/*"}}));
  // The sentinel percent-encoded in its own slot is still the sentinel to the upstream.
  std::string spelled = example_;
  spelled.replace(0, 1, "%63");  // 'c'
  d = decide("a.b.example.com", 443, get("/?api_key=" + spelled));
  ASSERT_EQ(d.kind, Kind::kRewritten) << d.refusal.message;
  EXPECT_EQ(d.head.target, "/?api_key=" + encoded);
}

TEST_F(RequestRewriteTest, SecurityCheck46_WildcardAndPortRulesDecideWhichHostsGetTheSecret) {
  const RequestHead head = get("/q?api_key=" + example_);
  // *.example.com:443 and example.com:8080.
  EXPECT_EQ(decide("a.example.com", 443, head).kind, Kind::kRewritten);
  EXPECT_EQ(decide("a.b.example.com", 443, head).kind, Kind::kRewritten);
  EXPECT_EQ(decide("example.com", 8080, head).kind, Kind::kRewritten);
  EXPECT_EQ(refused("example.com", 443, head), Reason::kSentinelToOtherHost);
  EXPECT_EQ(refused("a.example.com", 80, head), Reason::kSentinelToOtherHost);
  EXPECT_EQ(refused("a.example.com", 8080, head), Reason::kSentinelToOtherHost);
  EXPECT_EQ(refused("notexample.com", 443, head), Reason::kSentinelToOtherHost);
  EXPECT_EQ(refused("example.com.evil.test", 443, head), Reason::kSentinelToOtherHost);
  EXPECT_EQ(refused("203.0.113.7", 443, head), Reason::kSentinelToOtherHost);
}

TEST_F(RequestRewriteTest, SecurityCheck46_ASentinelToAnotherAllowedHostIsRefusedAnywhere) {
  const char* host = "uploads.example.org";
  EXPECT_EQ(refused(host, 443, bearer(github_)), Reason::kSentinelToOtherHost);
  EXPECT_EQ(refused(host, 443, get("/collect?t=" + github_)), Reason::kSentinelToOtherHost);
  EXPECT_EQ(refused(host, 443, get("/collect/" + github_ + "/x")), Reason::kSentinelToOtherHost);
  EXPECT_EQ(refused(host, 443, get("/", {{"Cookie", "session=" + github_}})),
            Reason::kSentinelToOtherHost);
  EXPECT_EQ(refused(host, 443, get("/", {{"X-" + github_, "1"}})), Reason::kSentinelToOtherHost);
  // A query credential's sentinel in a header of a host that is not its own.
  EXPECT_EQ(refused("api.github.com", 443, get("/", {{"X-Key", example_}})),
            Reason::kSentinelToOtherHost);
  // And a header credential's sentinel in the query of another credential's host.
  EXPECT_EQ(refused("www.example.com", 443, get("/?api_key=" + example_ + "&t=" + github_)),
            Reason::kSentinelToOtherHost);
  RewriteDecision d = decide(host, 443, bearer(github_));
  EXPECT_EQ(d.refusal.env, "GITHUB_TOKEN");
  EXPECT_NE(d.refusal.message.find("uploads.example.org"), std::string::npos) << d.refusal.message;
  EXPECT_NE(d.refusal.message.find("exfiltration"), std::string::npos) << d.refusal.message;
  EXPECT_TRUE(d.head.headers.empty());
  EXPECT_STREQ(refusal_reason_name(d.refusal.reason), "sentinel_to_other_host");
}

TEST_F(RequestRewriteTest, SecurityCheck46_EncodedCasedAndSplitSentinelsAreFound) {
  const char* host = "uploads.example.org";
  // Every byte percent-encoded, either hex case; one byte; twice encoded.
  std::string all;
  for (char c : github_) {
    char buf[4];
    snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
    all += buf;
  }
  EXPECT_EQ(refused(host, 80, get("/?q=" + all)), Reason::kSentinelToOtherHost);
  std::string one = github_;
  one.replace(0, 1, "%63");  // 'c'
  EXPECT_EQ(refused(host, 80, get("/?q=" + one)), Reason::kSentinelToOtherHost);
  std::string twice = github_;
  twice.replace(0, 1, "%2563");
  EXPECT_EQ(refused(host, 80, get("/?q=" + twice)), Reason::kSentinelToOtherHost);
  std::string upper = github_;
  for (char& c : upper)
    c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(refused(host, 80, get("/", {{"X-Upload", upper}})), Reason::kSentinelToOtherHost);
  // The random part alone, and a sentinel split across two parameters or path segments.
  EXPECT_EQ(refused(host, 80, get("/?id=" + hex(github_))), Reason::kSentinelToOtherHost);
  EXPECT_EQ(refused(host, 80, get("/?a=" + github_.substr(0, 20) + "&b=" + github_.substr(20))),
            Reason::kSentinelToOtherHost);
  EXPECT_EQ(refused(host, 80, get("/" + github_.substr(0, 30) + "/" + github_.substr(30))),
            Reason::kSentinelToOtherHost);
  // A bare prefix with no live credential's digits.
  EXPECT_EQ(refused(host, 80, get("/?q=CARAPACE-CRED-ffff")), Reason::kUnknownSentinel);
}

TEST_F(RequestRewriteTest, SecurityCheck47_TheSandboxsOwnKeyInACredentialedSlotIsRefused) {
  EXPECT_EQ(refused("api.github.com", 443, bearer("ghp_attackersOwnKey")), Reason::kForeignSecret);
  EXPECT_EQ(refused("api.github.com", 443, get("/", {{"Authorization", "token " + github_}})),
            Reason::kForeignSecret);
  EXPECT_EQ(refused("api.github.com", 443, get("/", {{"Authorization", ""}})),
            Reason::kForeignSecret);
  // Two fields of that name: refused when any is not the template.
  EXPECT_EQ(
      refused("api.github.com", 443,
              get("/", {{"Authorization", "Bearer " + github_}, {"authorization", "Bearer mine"}})),
      Reason::kForeignSecret);
  EXPECT_EQ(
      refused("api.github.com", 443,
              get("/", {{"authorization", "Bearer mine"}, {"Authorization", "Bearer " + github_}})),
      Reason::kForeignSecret);
  // Query slots: a value of its own, the name percent-encoded, after ';', with no value.
  for (const std::string& target : std::vector<std::string>{
           "/?api_key=mine", "/?api%5Fkey=mine", "/?x=1;api_key=mine", "/?api_key",
           "/?api_key=" + example_ + "&api_key=mine", "/?api_key=" + example_ + "x"}) {
    RewriteDecision d = decide("www.example.com", 443, get(target));
    ASSERT_EQ(d.kind, Kind::kRefused) << target;
    EXPECT_EQ(d.refusal.reason, Reason::kForeignSecret) << target;
    EXPECT_EQ(d.refusal.env, "EXAMPLE_KEY") << target;
  }
  // The same slot on a host with no credential is the client's business.
  EXPECT_EQ(decide("www.example.org", 443, bearer("ghp_attackersOwnKey")).kind, Kind::kUnchanged);
  EXPECT_EQ(decide("www.example.com", 80, get("/?api_key=mine")).kind, Kind::kUnchanged);
}

TEST_F(RequestRewriteTest, SecurityCheck46_ASentinelOutsideItsSlotIsRefusedOnItsOwnHost) {
  EXPECT_EQ(refused("api.github.com", 443, get("/repos/" + github_)), Reason::kSentinelOutsideSlot);
  EXPECT_EQ(refused("api.github.com", 443, get("/", {{"X-Token", github_}})),
            Reason::kSentinelOutsideSlot);
  EXPECT_EQ(refused("www.example.com", 443, get("/?key=" + example_)),
            Reason::kSentinelOutsideSlot);
  // Substituted in its slot, stray in the path: still refused.
  EXPECT_EQ(refused("api.github.com", 443, bearer(github_, "/echo/" + github_)),
            Reason::kSentinelOutsideSlot);
}

// A refusal quotes a query parameter's name as it was sent: a name that percent-decodes to a
// secret (the client sent it encoded) must not come back decoded in the message, which decide()
// checks for every answer.
TEST_F(RequestRewriteTest, SecurityCheck48_AParameterNameThatDecodesToASecretIsQuotedAsSent) {
  const std::string encoded = ascii::percent_encode(kExampleSecret);
  ASSERT_EQ(encoded.find(kExampleSecret), std::string::npos);
  RewriteDecision d = decide("api.github.com", 443, get("/?" + encoded + "=" + example_));
  ASSERT_EQ(d.kind, Kind::kRefused);
  EXPECT_EQ(d.refusal.reason, Reason::kSentinelToOtherHost);
  EXPECT_NE(d.refusal.message.find("query parameter '" + encoded + "'"), std::string::npos)
      << d.refusal.message;
}

TEST_F(RequestRewriteTest, RequestsWithoutCredentialsAreUnchanged) {
  EXPECT_EQ(decide("api.github.com", 443, get("/user")).kind, Kind::kUnchanged);
  EXPECT_EQ(decide("pypi.org", 443, get("/simple/?q=1", {{"Accept", "text/html"}})).kind,
            Kind::kUnchanged);
  CredentialSet none;
  EXPECT_EQ(rewrite_request(none, dest("api.github.com", 443), bearer("x")).kind, Kind::kUnchanged);
  // With no credentials at all, a sentinel-shaped token is still no one's.
  RewriteDecision d = rewrite_request(none, dest("x.example", 443), get("/?" + github_));
  EXPECT_EQ(d.kind, Kind::kRefused);
  EXPECT_EQ(d.refusal.reason, Reason::kUnknownSentinel);
}

TEST_F(RequestRewriteTest, MalformedHeadsAreRefused) {
  for (const std::string& target : std::vector<std::string>{
           "", "*", "http://api.github.com/", "/a b", "/a\tb", "/#frag", "/\x7f", "/\xc3\xa9"})
    EXPECT_EQ(refused("api.github.com", 443, get(target)), Reason::kMalformed) << target;
  EXPECT_EQ(refused("api.github.com", 443, get("/", {{"", "x"}})), Reason::kMalformed);
  EXPECT_EQ(refused("api.github.com", 443, get("/", {{"Bad Name", "x"}})), Reason::kMalformed);
  EXPECT_EQ(refused("api.github.com", 443,
                    get("/", {{"Authorization", "Bearer " + github_ + "\r\nX: y"}})),
            Reason::kMalformed);
  EXPECT_EQ(refused("api.github.com", 443, get("/", {{"X", std::string("a\0b", 3)}})),
            Reason::kMalformed);
}

TEST_F(RequestRewriteTest, SecurityCheck46_SentinelsInHostnamesAreRefused) {
  auto r = refuse_sentinel_in(set_, "the CONNECT target", github_ + ".evil.example:443");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, Reason::kSentinelToOtherHost);
  EXPECT_EQ(r->env, "GITHUB_TOKEN");
  EXPECT_NE(r->message.find("the CONNECT target"), std::string::npos);
  expect_no_secret(r->message, kGithubSecret);
  // Upper case (DNS names are case-insensitive), and the random part alone as a label.
  std::string upper = example_;
  for (char& c : upper)
    c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  r = refuse_sentinel_in(set_, "the SOCKS5 name", upper + ".example");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->env, "EXAMPLE_KEY");
  r = refuse_sentinel_in(set_, "the SOCKS5 name", hex(example_) + ".example");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->env, "EXAMPLE_KEY");
  r = refuse_sentinel_in(set_, "the SOCKS5 name", "carapace-cred-x.example");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, Reason::kUnknownSentinel);
  EXPECT_FALSE(refuse_sentinel_in(set_, "the CONNECT target", "api.github.com:443"));
}

TEST(SentinelScanTest, TheScanFormDecodesAndLowersCase) {
  EXPECT_EQ(sentinel_scan_form("A%41%2541%252541"), "aaaa");
  EXPECT_EQ(sentinel_scan_form("%zz%4"), "%zz%4");
  // At most four rounds: a fifth encoding is left as it is.
  EXPECT_EQ(sentinel_scan_form("%25252541"), "a");
  EXPECT_EQ(sentinel_scan_form("%2525252541"), "%41");
}

}  // namespace
}  // namespace carapace::egress
