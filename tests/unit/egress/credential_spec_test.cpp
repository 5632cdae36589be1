// credential_from_json and the checks behind it: the accepted shapes, each bad input refused
// with a one-line invalid-input error, and no error ever holding the secret (docs/security.md
// #48).
#include "egress/credentials/credential_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/unit/egress/credential_test_util.h"

namespace carapace::egress {
namespace {

using testing::expect_no_secret;
using testing::github_json;
using testing::kGithubSecret;

std::string error_of(const nlohmann::json& j) {
  auto r = credential_from_json(j, "network.credentials[0]");
  EXPECT_FALSE(r) << j.dump() << " was accepted";
  if (r) return "";
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput) << j.dump();
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos) << r.error().message;
  expect_no_secret(r.error().message, kGithubSecret);
  return r.error().message;
}

// The entry with one field replaced (or removed, for a null value).
nlohmann::json with(const char* key, const nlohmann::json& value) {
  nlohmann::json j = github_json();
  if (value.is_null())
    j.erase(key);
  else
    j[key] = value;
  return j;
}

void expect_refused(const nlohmann::json& j, std::string_view why) {
  const std::string message = error_of(j);
  EXPECT_NE(message.find(why), std::string::npos) << j.dump() << ": " << message;
}

TEST(CredentialSpecTest, AHeaderEntry) {
  CredentialSpec spec = testing::spec_of(github_json());
  ASSERT_EQ(spec.hosts.size(), 1u);
  EXPECT_EQ(spec.hosts[0].name, "api.github.com");
  EXPECT_EQ(spec.slot.kind, CredentialSlot::Kind::kHeader);
  EXPECT_EQ(spec.slot.name, "Authorization");
  EXPECT_EQ(spec.slot.prefix, "Bearer ");
  EXPECT_EQ(spec.slot.suffix, "");
  EXPECT_EQ(spec.slot.template_text(), "Authorization: Bearer {secret}");
  EXPECT_EQ(spec.secret.reveal(), kGithubSecret);
  EXPECT_EQ(spec.env, "GITHUB_TOKEN");
  EXPECT_EQ(spec.describe(), "GITHUB_TOKEN: header 'Authorization' for api.github.com");
}

TEST(CredentialSpecTest, AHeaderTemplateWithTextAroundTheSecret) {
  CredentialSpec spec = testing::spec_of(with("header", "X-Api-Key:  key={secret}; v=2 \t"));
  EXPECT_EQ(spec.slot.name, "X-Api-Key");
  EXPECT_EQ(spec.slot.prefix, "key=");
  EXPECT_EQ(spec.slot.suffix, "; v=2");
}

TEST(CredentialSpecTest, AQueryEntry) {
  CredentialSpec spec = testing::spec_of(testing::example_json());
  EXPECT_EQ(spec.slot.kind, CredentialSlot::Kind::kQuery);
  EXPECT_EQ(spec.slot.name, "api_key");
  ASSERT_EQ(spec.hosts.size(), 2u);
  EXPECT_EQ(spec.hosts[0].kind, HostRule::Kind::kWildcard);
  EXPECT_EQ(spec.hosts[0].port, 443);
  EXPECT_EQ(spec.describe(),
            "EXAMPLE_KEY: query parameter 'api_key' for *.example.com:443, example.com:8080");
}

TEST(CredentialSpecTest, SecurityCheck48_TheShapeIsStrict) {
  expect_refused(nlohmann::json::array(), "must be an object");
  expect_refused(with("extra", 1), "unknown field");
  expect_refused(with("hosts", nullptr), "hosts: must be an array");
  expect_refused(with("hosts", "api.github.com"), "hosts: must be an array");
  expect_refused(with("hosts", nlohmann::json::array({1})), "entries must be strings");
  expect_refused(with("env", nullptr), "env: is required");
  expect_refused(with("env", 7), "env: must be a string");
  expect_refused(with("secret", nullptr), "secret: is required");
  expect_refused(with("secret", 7), "secret: must be a string");
  expect_refused(with("header", nullptr), "exactly one of header and query");
  expect_refused(with("query", "api_key"), "exactly one of header and query");
  expect_refused(with("header", 1), "header: must be a string");
}

TEST(CredentialSpecTest, SecurityCheck48_BadHostsAreRefused) {
  expect_refused(with("hosts", nlohmann::json::array()), "hosts: must name 1 to 64 hosts");
  expect_refused(with("hosts", {"api.github.com", "bad host"}), "hosts[1]: host rule");
  expect_refused(with("hosts", {"*"}), "every allowed host");
  expect_refused(with("hosts", {"*:443"}), "every allowed host");
  nlohmann::json many = nlohmann::json::array();
  for (int i = 0; i < 65; ++i)
    many.push_back("h" + std::to_string(i) + ".example");
  expect_refused(with("hosts", many), "1 to 64 hosts");
}

TEST(CredentialSpecTest, SecurityCheck48_BadHeaderTemplatesAreRefused) {
  expect_refused(with("header", "Authorization Bearer {secret}"), "'Name: value template'");
  expect_refused(with("header", ": Bearer {secret}"), "header name is empty");
  expect_refused(with("header", "Auth orization: {secret}"), "not an HTTP token");
  expect_refused(with("header", "Authorization: Bearer"), "has no {secret}");
  expect_refused(with("header", "Authorization: {secret}{secret}"), "more than once");
  // Header injection: a CR or LF in the template would end the field and start another.
  expect_refused(with("header", "Authorization: Bearer {secret}\r\nX-Evil: 1"), "printable");
  expect_refused(with("header", "Authorization: Bearer {secret}\n"), "printable");
  expect_refused(with("header", std::string("Authorization: ") + '\0' + "{secret}"), "printable");
  for (const char* name : {"Host", "content-length", "Transfer-Encoding", "Connection",
                           "Proxy-Authorization", "Upgrade", "TE", "Keep-Alive"})
    expect_refused(with("header", std::string(name) + ": {secret}"), "by the proxy itself");
}

TEST(CredentialSpecTest, SecurityCheck48_BadQueryNamesAreRefused) {
  nlohmann::json j = testing::example_json();
  for (const char* bad : {"", "api key", "api&key", "api=key", "api%5Fkey", "ключ"}) {
    j["query"] = bad;
    const std::string message = error_of(j);
    EXPECT_NE(message.find("query: the parameter name"), std::string::npos) << bad << message;
  }
  j["query"] = std::string(129, 'a');
  expect_refused(j, "1 to 128 bytes");
}

TEST(CredentialSpecTest, SecurityCheck48_BadSecretsAreRefusedWithoutBeingShown) {
  expect_refused(with("secret", ""), "secret: must be 1 to 4096 bytes, not 0");
  expect_refused(with("secret", std::string(4097, 'k')), "not 4097");
  // Each of these holds the secret so the search in error_of can find it if it leaks.
  for (const std::string& bad :
       {std::string(kGithubSecret) + "\r\nX-Evil: 1", std::string(kGithubSecret) + "\n",
        std::string(kGithubSecret) + std::string(1, '\0') + "x",
        std::string(kGithubSecret) + "\x01", std::string(kGithubSecret) + "\x7f",
        std::string(kGithubSecret) + "\xc3\xa9"})
    expect_refused(with("secret", bad), "secret: must be printable ASCII");
  expect_refused(with("secret", " " + std::string(kGithubSecret)), "begin or end with a space");
  expect_refused(with("secret", std::string(kGithubSecret) + " "), "begin or end with a space");
  expect_refused(with("secret", "<redacted>"), "redacted placeholder");
  // Spaces inside, and the longest secret, are fine.
  EXPECT_TRUE(credential_from_json(with("secret", "a b"), "c"));
  EXPECT_TRUE(credential_from_json(with("secret", std::string(4096, 'k')), "c"));
}

TEST(CredentialSpecTest, SecurityCheck48_BadEnvNamesAreRefused) {
  for (const char* bad : {"", "1TOKEN", "MY-TOKEN", "MY TOKEN", "TOKEN=1", "TÖKEN"})
    expect_refused(with("env", bad), "env: ");
  expect_refused(with("env", std::string(129, 'A')), "1 to 128 bytes");
  // What the agent sets in every exec's environment, in any case.
  for (const char* taken :
       {"PATH", "HOME", "LANG", "TERM", "HTTP_PROXY", "https_proxy", "All_Proxy", "NO_PROXY",
        "no_proxy", "Path", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT",
        "GIT_SSL_CAINFO", "Node_Extra_CA_Certs"})
    expect_refused(with("env", taken), "set by the sandbox's agent");
  expect_refused(with("env", "LD_PRELOAD"), "dynamic loader");
  expect_refused(with("env", "ld_library_path"), "dynamic loader");
  for (const char* good : {"_T", "GITHUB_TOKEN", "token2", "PATHS", "MY_HTTP_PROXY_KEY"})
    EXPECT_TRUE(credential_from_json(with("env", good), "c")) << good;
}

TEST(CredentialSpecTest, SecurityCheck48_TheListIsBoundedAndEnvNamesDistinct) {
  EXPECT_TRUE(credentials_from_json(nullptr, "network.credentials")->empty());
  auto r = credentials_from_json(github_json(), "network.credentials");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("must be an array"), std::string::npos);

  nlohmann::json two = {github_json(), with("hosts", {"uploads.github.com"})};
  r = credentials_from_json(two, "network.credentials");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(r.error().message.find("env 'GITHUB_TOKEN' is named by two credentials"),
            std::string::npos)
      << r.error().message;
  expect_no_secret(r.error().message, kGithubSecret);

  nlohmann::json many = nlohmann::json::array();
  for (size_t i = 0; i < kMaxCredentials; ++i)
    many.push_back(with("env", "T" + std::to_string(i)));
  r = credentials_from_json(many, "network.credentials");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->size(), kMaxCredentials);
  many.push_back(with("env", "ONE_MORE"));
  r = credentials_from_json(many, "network.credentials");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("at most 32 credentials, not 33"), std::string::npos);

  // An error inside an entry names the entry.
  nlohmann::json bad = {github_json(), with("env", "PATH")};
  bad[1]["env"] = "PATH";
  r = credentials_from_json(bad, "network.credentials");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("network.credentials[1].env"), std::string::npos)
      << r.error().message;
}

TEST(CredentialSpecTest, SecurityCheck48_TheSecretIsWipedWhenItGoes) {
  // A moved-from Secret keeps nothing; the moved-to one has the bytes.
  Secret a{std::string(kGithubSecret)};
  Secret b = std::move(a);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): the point of the test
  EXPECT_EQ(b.reveal(), kGithubSecret);
  Secret c;
  c = std::move(b);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(c.reveal(), kGithubSecret);
}

}  // namespace
}  // namespace carapace::egress
