// The sandbox network field (daemon/core/request_json.h): what internet defaults to, what is
// refused and how the error names the entry, and that the JSON view gives back what was parsed.
#include <gtest/gtest.h>

#include "daemon/core/request_json.h"

namespace carapace::service {
namespace {

using nlohmann::json;

TEST(NetworkSpecTest, InternetFollowsTheAllowRulesUnlessGiven) {
  auto on =
      parse_network_spec(json{{"allow_hosts", {"pypi.org:443", "*.pythonhosted.org"}}}, "network");
  ASSERT_TRUE(on.ok()) << on.error().message;
  EXPECT_TRUE(on->internet);
  EXPECT_EQ(on->policy.allow_texts(),
            (std::vector<std::string>{"pypi.org:443", "*.pythonhosted.org"}));
  auto off = parse_network_spec(json{{"deny_hosts", {"evil.test"}}}, "network");
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_FALSE(off->internet);  // deny rules alone allow nothing: no proxy
  auto empty_on = parse_network_spec(json{{"internet", true}}, "network");
  ASSERT_TRUE(empty_on.ok()) << empty_on.error().message;
  EXPECT_TRUE(empty_on->internet);  // a proxy that refuses everything until a PUT
  EXPECT_TRUE(empty_on->policy.allow.empty());
  EXPECT_EQ(network_spec_json(*on), (json{{"internet", true},
                                          {"allow_hosts", {"pypi.org:443", "*.pythonhosted.org"}},
                                          {"deny_hosts", json::array()},
                                          {"credentials", json::array()},
                                          {"upstreams", json::array()}}));
}

TEST(NetworkSpecTest, BadInputIsOneLineNamingTheField) {
  struct Case {
    json body;
    const char* needle;
  };
  const Case cases[] = {
      {json::array(), "network: must be an object"},
      {json{{"allow_hosts", {"ok.test", "a b"}}}, "network.allow_hosts[1]"},
      {json{{"allow_hosts", "ok.test"}}, "network.allow_hosts: must be an array"},
      {json{{"deny_hosts", {5}}}, "network.deny_hosts: entries must be strings"},
      {json{{"allow_hosts", {"ok.test"}}, {"internet", false}}, "allow_hosts given with internet"},
      {json{{"internet", 1}}, "network.internet: must be true or false"},
      {json{{"allow", {"10.0.0.0/8:tcp:443"}}}, "network.allow: replaced by allow_hosts"},
      {json{{"other", 1}}, "network.other: unknown field"},
  };
  for (const Case& c : cases) {
    auto r = parse_network_spec(c.body, "network");
    ASSERT_FALSE(r.ok()) << c.body.dump();
    EXPECT_NE(r.error().message.find(c.needle), std::string::npos)
        << c.body.dump() << " -> " << r.error().message;
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
  }
}

TEST(NetworkSpecTest, TemplatesTakeAPolicyOrFalse) {
  auto none = parse_template_request(json{{"network", false}});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->network.internet);
  EXPECT_EQ(template_request_json(*none)["network"], false);
  auto some = parse_template_request(json{{"network", {{"allow_hosts", {"pypi.org"}}}}});
  ASSERT_TRUE(some.ok()) << some.error().message;
  EXPECT_TRUE(some->network.internet);
  // The record a restart reloads gives the same policy back.
  auto again = parse_template_request(template_request_json(*some));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->network.policy.allow_texts(), std::vector<std::string>{"pypi.org"});
  EXPECT_FALSE(parse_template_request(json{{"network", true}}).ok());
  auto fork = parse_fork_request(json{{"count", 2}, {"network", {{"internet", false}}}});
  ASSERT_TRUE(fork.ok());
  ASSERT_TRUE(fork->network.has_value());
  EXPECT_FALSE(fork->network->internet);
  EXPECT_FALSE(parse_fork_request(json{{"count", 1}})->network.has_value());
}

constexpr const char* kSecret = "ghp_S3cretValueThatMustNeverShow";

json credential(json extra = json::object()) {
  json c{{"hosts", {"api.example.test"}},
         {"header", "Authorization: Bearer {secret}"},
         {"secret", kSecret},
         {"env", "EXAMPLE_TOKEN"}};
  c.update(extra);
  return c;
}

// docs/security.md #48: the view and the record never hold the secret.
TEST(NetworkSpecTest, CredentialsAreParsedAndGivenBackRedacted) {
  auto n = parse_network_spec(
      json{{"allow_hosts", {"api.example.test:443"}}, {"credentials", {credential()}}}, "network");
  ASSERT_TRUE(n.ok()) << n.error().message;
  ASSERT_EQ(n->credentials.size(), 1u);
  EXPECT_EQ(n->credentials[0].secret.reveal(), kSecret);
  const json view = network_spec_json(*n);
  EXPECT_EQ(view["credentials"][0]["env"], "EXAMPLE_TOKEN");
  EXPECT_EQ(view["credentials"][0]["header"], "Authorization: Bearer {secret}");
  EXPECT_EQ(view["credentials"][0]["secret"], "<redacted>");
  EXPECT_EQ(view.dump().find(kSecret), std::string::npos);
  // A template's record has no credentials at all: reloaded, it has none until given again.
  auto tpl = parse_template_request(
      json{{"network", {{"allow_hosts", {"api.example.test"}}, {"credentials", {credential()}}}}});
  ASSERT_TRUE(tpl.ok()) << tpl.error().message;
  EXPECT_EQ(tpl->network.credentials.size(), 1u);
  const json record = template_request_json(*tpl);
  EXPECT_EQ(record.dump().find(kSecret), std::string::npos);
  EXPECT_FALSE(record["network"].contains("credentials"));
  auto again = parse_template_request(record);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_TRUE(again->network.credentials.empty());
}

TEST(NetworkSpecTest, BadCredentialsAreRefusedWithoutTheSecretInTheMessage) {
  const json cases[] = {
      json{{"allow_hosts", {"a.test"}}, {"credentials", credential()}},  // not a list
      json{{"allow_hosts", {"a.test"}}, {"credentials", {credential({{"hosts", {"*"}}})}}},
      json{{"allow_hosts", {"a.test"}}, {"credentials", {credential({{"env", "PATH"}})}}},
      json{{"allow_hosts", {"a.test"}},
           {"credentials", {credential({{"header", "Authorization: Bearer"}})}}},
      json{{"allow_hosts", {"a.test"}}, {"credentials", {credential(), credential()}}},
      json{{"credentials", {credential()}}},  // no internet
      json{{"allow_hosts", {"a.test"}},
           {"credentials", {credential({{"secret", std::string(kSecret) + "\n"}})}}},
  };
  for (const json& body : cases) {
    auto r = parse_network_spec(body, "network");
    ASSERT_FALSE(r.ok()) << body.dump();
    EXPECT_NE(r.error().message.find("network"), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.find(kSecret), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace carapace::service
