// `--credential SPEC` and `--upstream ALIAS=ORIGIN`, the flags that give a sandbox credentials
// its egress proxy puts into requests (docs/api.md, Egress, Credentials), shared by
// `carapace sandbox create|fork|network` and `carapace mcp`.
//
// SPEC is comma-separated key=value:
//   env=NAME,host=H[,host=H2]...,secret-env=VAR|secret-file=PATH,header=TEMPLATE | query=PARAM
// The secret is read from the CLI's own environment (secret-env) or from the first line of a file
// (secret-file), never taken from the command line, where `ps` would show it: a secret= key is
// refused. header= comes last: everything after it, commas included, is the template
// ("Authorization: Bearer {secret}"). Every error is one line that never holds the secret nor the
// header's template (which may hold part of a credential); the daemon checks the rest (host
// rules, env names, the template's shape) and its messages never hold them either.
#pragma once

#include <string>

#include "clients/cpp/daemon_client.h"
#include "common/base/result.h"

namespace carapace::sandbox {

// The daemon's bound on a secret's length, checked here too so that a wrong file (a key pair, a
// log) is refused before it is sent anywhere.
inline constexpr size_t kMaxSecretBytes = 4096;

// `flag` names the option in the messages ("--credential").
Result<CredentialRequest> parse_credential_spec(const std::string& flag, const std::string& spec);
// ALIAS=https://HOST[:PORT]: the alias a host name for plain HTTP inside the sandbox, the origin
// the TLS server the proxy sends its requests on to.
Result<UpstreamRequest> parse_upstream_spec(const std::string& flag, const std::string& spec);

}  // namespace carapace::sandbox
