// CredentialSet: sentinels (their shape, one per entry and per set), the environment a sandbox
// gets, the redacted JSON view and describe(), rotation and revocation (docs/security.md #46,
// #48).
#include "egress/credentials/credential_set.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "egress/credentials/request_rewrite.h"
#include "egress/credentials/sentinel.h"
#include "tests/unit/egress/credential_test_util.h"

namespace carapace::egress {
namespace {

using testing::expect_no_secret;
using testing::github_and_example;
using testing::kExampleSecret;
using testing::kGithubSecret;

Destination dest(std::string_view host, uint16_t port) {
  auto d = parse_destination(host, port);
  EXPECT_TRUE(d) << host;
  return d ? d.value() : Destination{};
}

RequestHead bearer(const std::string& token) {
  return RequestHead{"/user", {{"Authorization", "Bearer " + token}}};
}

TEST(CredentialSentinelTest, TheShapeIsThePrefixAnd32LowerCaseHexDigits) {
  auto s = make_sentinel();
  ASSERT_TRUE(s) << s.error().describe();
  EXPECT_EQ(s->size(), 46u);
  EXPECT_TRUE(s->starts_with("carapace-cred-"));
  for (char c : s->substr(14))
    EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << *s;
  EXPECT_TRUE(is_sentinel(*s));
  EXPECT_FALSE(is_sentinel("carapace-cred-"));
  EXPECT_FALSE(is_sentinel("carapace-cred-0123456789abcdef0123456789abcdeF"));
  EXPECT_FALSE(is_sentinel("carapace-cred-0123456789abcdef0123456789abcde"));
  EXPECT_FALSE(is_sentinel("carapace-cred-0123456789abcdef0123456789abcdef0"));
  EXPECT_FALSE(is_sentinel("carapace-crex-0123456789abcdef0123456789abcdef"));
  EXPECT_TRUE(is_sentinel("carapace-cred-0123456789abcdef0123456789abcdef"));
}

TEST(CredentialSentinelTest, SecurityCheck46_EverySentinelIsFresh) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    auto s = make_sentinel();
    ASSERT_TRUE(s);
    EXPECT_TRUE(seen.insert(*s).second) << "repeated: " << *s;
  }
  // Two sandboxes with the same configuration get different sentinels, entry by entry.
  CredentialSet a = github_and_example();
  CredentialSet b = github_and_example();
  ASSERT_EQ(a.entries().size(), 2u);
  ASSERT_EQ(b.entries().size(), 2u);
  EXPECT_NE(a.entries()[0].sentinel, b.entries()[0].sentinel);
  EXPECT_NE(a.entries()[0].sentinel, a.entries()[1].sentinel);
  EXPECT_NE(a.entries()[1].sentinel, b.entries()[1].sentinel);
}

TEST(CredentialSetTest, TheSandboxsEnvironmentHoldsSentinelsOnly) {
  CredentialSet set = github_and_example();
  const auto env = set.env();
  ASSERT_EQ(env.size(), 2u);
  EXPECT_EQ(env.at("GITHUB_TOKEN"), set.find("GITHUB_TOKEN")->sentinel);
  EXPECT_EQ(env.at("EXAMPLE_KEY"), set.find("EXAMPLE_KEY")->sentinel);
  for (const auto& [name, value] : env) {
    EXPECT_TRUE(is_sentinel(value)) << name;
    expect_no_secret(value, kGithubSecret);
    expect_no_secret(value, kExampleSecret);
  }
  EXPECT_EQ(set.find("NOPE"), nullptr);
}

TEST(CredentialSetTest, SecurityCheck48_TheJsonViewAndDescribeRedactTheSecret) {
  CredentialSet set = github_and_example();
  const nlohmann::json view = set.to_json();
  const nlohmann::json want = nlohmann::json::parse(R"([
    {"env": "GITHUB_TOKEN", "hosts": ["api.github.com"],
     "header": "Authorization: Bearer {secret}", "secret": "<redacted>"},
    {"env": "EXAMPLE_KEY", "hosts": ["*.example.com:443", "example.com:8080"],
     "query": "api_key", "secret": "<redacted>"}])");
  EXPECT_EQ(view, want) << view.dump();
  const std::string text = view.dump();
  const std::string line = set.describe();
  EXPECT_EQ(line,
            "2 credentials: GITHUB_TOKEN: header 'Authorization' for api.github.com; "
            "EXAMPLE_KEY: query parameter 'api_key' for *.example.com:443, example.com:8080");
  for (const std::string& s : {text, line}) {
    expect_no_secret(s, kGithubSecret);
    expect_no_secret(s, kExampleSecret);
    // Nor the sentinels: they are the sandbox's, not the reader's of the configuration.
    EXPECT_EQ(s.find("carapace-cred-"), std::string::npos) << s;
  }
  // The view sent back as a configuration is refused rather than taken as a secret.
  auto again = credentials_from_json(view, "network.credentials");
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("redacted placeholder"), std::string::npos);
}

TEST(CredentialSetTest, SecurityCheck48_CreateChecksTheList) {
  std::vector<CredentialSpec> specs;
  specs.push_back(testing::spec_of(testing::github_json()));
  specs.push_back(testing::spec_of(testing::github_json()));
  auto set = CredentialSet::create(std::move(specs));
  ASSERT_FALSE(set);
  EXPECT_NE(set.error().message.find("named by two credentials"), std::string::npos);
  expect_no_secret(set.error().message, kGithubSecret);
}

TEST(CredentialSetTest, GivenSentinelsAreKeptAndChecked) {
  const std::string s0 = "carapace-cred-00000000000000000000000000000001";
  const std::string s1 = "carapace-cred-00000000000000000000000000000002";
  auto specs = [] {
    std::vector<CredentialSpec> v;
    v.push_back(testing::spec_of(testing::github_json()));
    v.push_back(testing::spec_of(testing::example_json()));
    return v;
  };
  auto set = CredentialSet::with_sentinels(specs(), {s0, s1});
  ASSERT_TRUE(set) << set.error().message;
  EXPECT_EQ(set->env().at("GITHUB_TOKEN"), s0);
  EXPECT_EQ(set->env().at("EXAMPLE_KEY"), s1);
  EXPECT_FALSE(CredentialSet::with_sentinels(specs(), {s0}));
  EXPECT_FALSE(CredentialSet::with_sentinels(specs(), {s0, s0}));
  auto bad = CredentialSet::with_sentinels(specs(), {s0, std::string(kGithubSecret)});
  ASSERT_FALSE(bad);
  expect_no_secret(bad.error().message, kGithubSecret);
}

TEST(CredentialSetTest, SecurityCheck48_RotationKeepsTheSentinel) {
  CredentialSet set = github_and_example();
  const std::string sentinel = set.find("GITHUB_TOKEN")->sentinel;
  const std::string fresh = "ghp_TheNextSecret9876543210";
  ASSERT_TRUE(set.rotate("GITHUB_TOKEN", Secret(fresh)));
  EXPECT_EQ(set.find("GITHUB_TOKEN")->sentinel, sentinel);
  EXPECT_EQ(set.env().at("GITHUB_TOKEN"), sentinel);
  // The same sentinel now brings the new secret, and the old one is gone.
  auto d = rewrite_request(set, dest("api.github.com", 443), bearer(sentinel));
  ASSERT_EQ(d.kind, RewriteDecision::Kind::kRewritten) << d.refusal.message;
  EXPECT_EQ(d.head.headers[0].second, "Bearer " + fresh);

  // A bad new secret is refused without being shown, and the old one stays.
  const std::string bad = fresh + "\r\nX-Evil: 1";
  auto st = set.rotate("GITHUB_TOKEN", Secret(bad));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind, ErrorKind::kInvalidInput);
  expect_no_secret(st.error().message, fresh);
  EXPECT_EQ(set.find("GITHUB_TOKEN")->spec.secret.reveal(), fresh);
  EXPECT_FALSE(set.rotate("NOPE", Secret(fresh)));
}

TEST(CredentialSetTest, SecurityCheck46_ARevokedSentinelIsRefusedEverywhere) {
  CredentialSet set = github_and_example();
  const std::string sentinel = set.find("GITHUB_TOKEN")->sentinel;
  ASSERT_TRUE(set.revoke("GITHUB_TOKEN"));
  EXPECT_EQ(set.find("GITHUB_TOKEN"), nullptr);
  EXPECT_EQ(set.env().count("GITHUB_TOKEN"), 0u);
  EXPECT_EQ(set.entries().size(), 1u);
  EXPECT_FALSE(set.revoke("GITHUB_TOKEN"));
  // On its own host, on another, and in a hostname: refused, never the old secret.
  for (const char* host : {"api.github.com", "www.example.com", "evil.example"}) {
    auto d = rewrite_request(set, dest(host, 443), bearer(sentinel));
    ASSERT_EQ(d.kind, RewriteDecision::Kind::kRefused) << host;
    EXPECT_EQ(d.refusal.reason, CredentialRefusalReason::kUnknownSentinel) << host;
    expect_no_secret(d.refusal.message, kGithubSecret);
  }
  auto r = refuse_sentinel_in(set, "the CONNECT target", sentinel + ".example:443");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, CredentialRefusalReason::kUnknownSentinel);
}

}  // namespace
}  // namespace carapace::egress
