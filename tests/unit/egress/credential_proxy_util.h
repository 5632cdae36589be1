// Shared by the proxy's credential tests: one header credential for a host, with a sentinel the
// test chose (as the daemon does), and the checks that a secret is nowhere it must not be.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "egress/credentials/credential_set.h"
#include "egress/credentials/proxy_credentials.h"
#include "egress/credentials/sentinel.h"
#include "tests/unit/egress/credential_test_util.h"

namespace carapace::egress::testing {

// Long and unlike anything in a message, as credential_test_util.h's.
inline constexpr std::string_view kApiSecret = "sk_live_ProxySecretValue0123456789QWERTY";
inline constexpr std::string_view kRotatedSecret = "sk_live_RotatedSecretValue9876543210ASDF";

inline std::string fresh_sentinel() {
  auto s = make_sentinel();
  EXPECT_TRUE(s.ok());
  return s.ok() ? *s : std::string();
}

// API_TOKEN for `host`: "Authorization: Bearer {secret}".
inline ProxyCredentials bearer_credentials(const std::string& host, std::string_view secret,
                                           const std::string& sentinel) {
  std::vector<CredentialSpec> specs;
  specs.push_back(spec_of({{"hosts", {host}},
                           {"header", "Authorization: Bearer {secret}"},
                           {"secret", std::string(secret)},
                           {"env", "API_TOKEN"}}));
  auto set = CredentialSet::with_sentinels(std::move(specs), {sentinel});
  EXPECT_TRUE(set.ok()) << set.error().message;
  ProxyCredentials out;
  if (set.ok()) out.set = std::move(*set);
  return out;
}

// The log as it is once `needle` is in it, or after 5 s: an allowed connection's line is written
// when its relay ends, a moment after the client saw the response end.
template <typename LogText>
std::string log_once(LogText log_text, const std::string& needle) {
  std::string log;
  for (int i = 0; i < 500; ++i) {
    log = log_text();
    if (log.find(needle) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return log;
}

}  // namespace carapace::egress::testing
