// Shared by the credential tests: entries built from their JSON form, and the check that a
// string never holds a secret.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "egress/credentials/credential_set.h"
#include "egress/credentials/credential_spec.h"

namespace carapace::egress::testing {

// Long and unlike anything else in a message, so a search for it cannot match by chance; and a
// part of it, so a secret cut short in a message is caught too.
inline constexpr std::string_view kGithubSecret = "ghp_TopSecretValue0123456789abcdefXYZ";
inline constexpr std::string_view kExampleSecret = "ex-key/With+Reserved=Chars&more";

inline void expect_no_secret(std::string_view text, std::string_view secret) {
  EXPECT_EQ(text.find(secret), std::string_view::npos) << "the secret is in: " << text;
  EXPECT_EQ(text.find(secret.substr(0, 12)), std::string_view::npos)
      << "part of the secret is in: " << text;
}

inline CredentialSpec spec_of(const nlohmann::json& j) {
  auto spec = credential_from_json(j, "credentials[0]");
  EXPECT_TRUE(spec) << j.dump() << ": " << spec.error().message;
  return spec ? std::move(spec).value() : CredentialSpec{};
}

inline nlohmann::json github_json() {
  return {{"hosts", {"api.github.com"}},
          {"header", "Authorization: Bearer {secret}"},
          {"secret", std::string(kGithubSecret)},
          {"env", "GITHUB_TOKEN"}};
}

inline nlohmann::json example_json() {
  return {{"hosts", {"*.example.com:443", "example.com:8080"}},
          {"query", "api_key"},
          {"secret", std::string(kExampleSecret)},
          {"env", "EXAMPLE_KEY"}};
}

inline CredentialSet github_and_example() {
  std::vector<CredentialSpec> specs;
  specs.push_back(spec_of(github_json()));
  specs.push_back(spec_of(example_json()));
  auto set = CredentialSet::create(std::move(specs));
  EXPECT_TRUE(set) << set.error().message;
  return set ? std::move(set).value() : CredentialSet{};
}

}  // namespace carapace::egress::testing
