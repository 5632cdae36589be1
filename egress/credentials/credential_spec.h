// One entry of a sandbox's `network.credentials`: which hosts it is for, where in a request its
// secret goes (a header, or a query parameter), the secret, and the environment variable that
// carries the sandbox's sentinel in its place. Parsed and checked once, when it is configured;
// nothing here ever puts the secret into an error message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "egress/credentials/secret.h"
#include "egress/policy/host_rule.h"

namespace carapace::egress {

inline constexpr size_t kMaxCredentials = 32;  // per sandbox
inline constexpr size_t kMaxSecretBytes = 4096;
inline constexpr size_t kMaxCredentialHosts = 64;  // per entry
inline constexpr size_t kMaxEnvNameBytes = 128;
// What a credential's JSON view shows for the secret. Refused as a secret, so a view sent back
// unchanged cannot replace the real secret with this text.
inline constexpr std::string_view kRedacted = "<redacted>";

// Where the secret goes. A header: the whole field value must be the template with the sentinel
// for "{secret}" ("Bearer carapace-cred-..."), and becomes the template with the secret. A query
// parameter: its value must be the sentinel, and becomes the secret (percent-encoded).
struct CredentialSlot {
  enum class Kind : uint8_t { kHeader, kQuery };
  Kind kind = Kind::kHeader;
  std::string name;    // the header's field name as written, or the query parameter's name
  std::string prefix;  // kHeader: the value template before "{secret}", leading OWS removed
  std::string suffix;  // kHeader: after "{secret}", trailing OWS removed

  // "header 'Authorization'" or "query parameter 'api_key'": for messages and logs.
  std::string describe() const;
  // kHeader: the whole template as configured ("Authorization: Bearer {secret}"); kQuery: the
  // name. The JSON view's "header" or "query".
  std::string template_text() const;
};

struct CredentialSpec {
  std::vector<HostRule> hosts;  // at least one; never "*" (that would be every allowed host)
  CredentialSlot slot;
  Secret secret;
  std::string env;

  // One line without the secret: "GITHUB_TOKEN: header 'Authorization' for api.github.com".
  std::string describe() const;
};

// The checks, each an invalid-input error of one line naming the field and never the secret.
// A header is "Name: value" with a token name (RFC 9110 §5.6.2) that is not a field the proxy
// drops or sets itself (Host, Content-Length, Transfer-Encoding, the hop-by-hop ones), and a
// value of printable ASCII (HTAB allowed) holding "{secret}" exactly once.
Result<CredentialSlot> parse_header_slot(std::string_view header);
// A query parameter name: 1..128 bytes of unreserved characters (RFC 3986 §2.3), so that it has
// one spelling before and after percent-decoding.
Result<CredentialSlot> parse_query_slot(std::string_view name);
// 1..kMaxSecretBytes of printable ASCII (space allowed, not at either end: a receiver trims it
// from a header value), never kRedacted.
Status check_secret(std::string_view secret);
// [A-Za-z_][A-Za-z0-9_]*, at most kMaxEnvNameBytes, and none the sandbox's agent sets itself or
// that changes how programs load: PATH, HOME, LANG, TERM, HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and
// NO_PROXY in any case, and LD_*.
Status check_env_name(std::string_view env);
// Each through parse_host_rule; 1..kMaxCredentialHosts of them; "*" refused.
Result<std::vector<HostRule>> parse_credential_hosts(const std::vector<std::string>& hosts);

// At most kMaxCredentials entries, with distinct env names (compared exactly: the environment is
// case-sensitive).
Status check_credential_list(const std::vector<CredentialSpec>& specs);

// {"hosts": [...], "header": "Authorization: Bearer {secret}" | "query": "api_key",
//  "secret": "...", "env": "GITHUB_TOKEN"}: every key but one of header/query required, none
// other allowed. `where` prefixes the messages ("network.credentials[0]").
Result<CredentialSpec> credential_from_json(const nlohmann::json& j, const std::string& where);
// The entry for giving back to clients: its env, hosts, header or query, and kRedacted for the
// secret.
nlohmann::json credential_view_json(const CredentialSpec& spec);

// An array of entries as check_credential_list wants them (null: none).
Result<std::vector<CredentialSpec>> credentials_from_json(const nlohmann::json& j,
                                                          const std::string& where);

}  // namespace carapace::egress
