// A sandbox's credentials as its proxy holds them: each configured entry with the sentinel the
// sandbox sees in its place. The sandbox gets env() (name -> sentinel), clients get to_json()
// (the secret redacted), and the proxy asks rewrite_request (request_rewrite.h) about each
// request. Not thread-safe: a proxy swaps whole sets (one is cheap to copy) rather than editing
// the one its sessions read.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "egress/credentials/credential_spec.h"
#include "egress/policy/egress_policy.h"

namespace carapace::egress {

struct Credential {
  CredentialSpec spec;
  std::string sentinel;

  // Whether this credential is for `dest` (one of its host rules matches, port included).
  bool is_for(const Destination& dest) const;
};

class CredentialSet {
 public:
  CredentialSet() = default;

  // A fresh sentinel for each entry (make_sentinel). The list as check_credential_list wants it.
  static Result<CredentialSet> create(std::vector<CredentialSpec> specs);
  // The same with sentinels given, one per entry in order: a set brought back after a restart of
  // its holder, whose sandbox already has these in its environment. Each must be is_sentinel and
  // all distinct.
  static Result<CredentialSet> with_sentinels(std::vector<CredentialSpec> specs,
                                              const std::vector<std::string>& sentinels);

  const std::vector<Credential>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  // The entry whose env is `env`, or nullptr.
  const Credential* find(std::string_view env) const;

  // What the sandbox's environment gets: env name -> sentinel.
  std::map<std::string, std::string> env() const;
  // [{"env": ..., "hosts": [...], "header": "Authorization: Bearer {secret}" | "query": ...,
  //   "secret": "<redacted>"}]: for giving back to clients. No sentinel either: that belongs to
  // the sandbox's environment, not to whoever reads the configuration.
  nlohmann::json to_json() const;
  // One line for logs: "2 credentials: A: header 'Authorization' for api.example.com; B: ...".
  std::string describe() const;

  // A new secret for the entry of `env`; its sentinel stays, so the sandbox's environment stays
  // valid. The secret is checked as check_secret does; an unknown env is an invalid-input error.
  Status rotate(std::string_view env, Secret secret);
  // Removes the entry of `env`. Its sentinel is then no live entry's: any request carrying it is
  // refused as a sentinel of no credential (request_rewrite.h), whatever the host.
  Status revoke(std::string_view env);

 private:
  Credential* find_mutable(std::string_view env);

  std::vector<Credential> entries_;
};

}  // namespace carapace::egress
