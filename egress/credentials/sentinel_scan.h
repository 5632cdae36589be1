// Finding sentinels where they must not be, and the refusals a proxy answers with. A sentinel is
// not a secret, so one that leaves the sandbox leaks nothing by itself; but one on its way to a
// host that is not its credential's, or in a hostname, is a program trying to send its
// credential somewhere else (a prompt-injected agent, a malicious package), which the operator
// wants refused and told about.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "egress/credentials/credential_set.h"

namespace carapace::egress {

enum class CredentialRefusalReason : uint8_t {
  // A live credential's sentinel for a host that is not one of that credential's (anywhere in
  // the target, a header, or a hostname).
  kSentinelToOtherHost,
  // Something shaped like a sentinel ("carapace-cred-") that is no live credential's: a revoked
  // one, another sandbox's, or a forged one.
  kUnknownSentinel,
  // A credentialed host's slot (its header or query parameter) holding anything but the
  // sentinel in its template: the client's own key, which would pass as the operator's.
  kForeignSecret,
  // A credential's sentinel on its own host but outside its slot (in the path, another header):
  // never replaced there, so refused rather than sent on as a stray token.
  kSentinelOutsideSlot,
  // A head the rewrite cannot read the way the upstream would (not origin form, control bytes).
  kMalformed,
};

// "sentinel_to_other_host", "unknown_sentinel", "foreign_secret", "sentinel_outside_slot",
// "malformed": for the proxy's decision line and its counters.
const char* refusal_reason_name(CredentialRefusalReason reason);

struct CredentialRefusal {
  CredentialRefusalReason reason = CredentialRefusalReason::kMalformed;
  std::string message;  // one line, never a secret
  std::string env;      // the credential concerned, "" when none is
};

// What a sentinel search looks at: percent-decoded until nothing changes (at most 4 rounds,
// enough for any spelling an upstream decodes; a deeper one is not the sentinel to it either),
// then in lower case, so "carapace-cred-%61..." and "CARAPACE-CRED-..." are found too.
std::string sentinel_scan_form(std::string_view bytes);

// The first sentinel in `bytes`: the credential whose sentinel, or whose sentinel's 32 random
// hex digits alone, appear (valid while `set` is unchanged), or nullptr with `found` for a bare
// "carapace-cred-" of no live credential. Encodings other than percent-encoding (base64, say)
// are not looked through: that is a program hiding a worthless token, not one reaching a secret.
struct SentinelHit {
  const Credential* credential = nullptr;
};
std::optional<SentinelHit> find_sentinel(const CredentialSet& set, std::string_view bytes);

// For bytes that may never carry a sentinel, whatever the host: a CONNECT authority, a SOCKS5
// domain name. `what` says where they were ("the CONNECT target"). The refusal is
// kSentinelToOtherHost for a live credential's sentinel, kUnknownSentinel otherwise.
std::optional<CredentialRefusal> refuse_sentinel_in(const CredentialSet& set, std::string_view what,
                                                    std::string_view bytes);

}  // namespace carapace::egress
