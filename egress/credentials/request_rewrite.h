// The proxy's one credential decision: an outgoing plain-HTTP request head, after the policy
// allowed its destination, before it is sent on. The sentinel becomes the secret only in the
// slot of a credential whose hosts include the destination, and only when the slot holds exactly
// the sentinel (in the header's template); a sentinel anywhere else, or a slot holding anything
// else, refuses the request. There is no response counterpart on purpose: responses go back to
// the sandbox as they came, never rewritten, so no secret can travel back in one.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "egress/credentials/credential_set.h"
#include "egress/credentials/sentinel_scan.h"
#include "egress/policy/egress_policy.h"

namespace carapace::egress {

// Header fields in arrival order, names as sent (the shape of http::HttpHeaders::fields()).
using HeaderFields = std::vector<std::pair<std::string, std::string>>;

struct RequestHead {
  std::string target;  // origin form: "/path?query"
  HeaderFields headers;
};

struct RewriteDecision {
  enum class Kind : uint8_t {
    kUnchanged,  // no credential involved: send the head as it is
    kRewritten,  // send `head` instead
    kRefused,    // answer with `refusal`, send nothing
  };
  Kind kind = Kind::kUnchanged;
  // kRewritten: the head with the secrets in. Never log it; log `used` instead.
  RequestHead head;
  std::vector<std::string> used;  // kRewritten: the env names of the credentials put in
  CredentialRefusal refusal;      // kRefused
};

// The order of the checks: a malformed head first; then any sentinel outside a slot it was
// substituted in (kSentinelToOtherHost for a live credential not for `dest`, kUnknownSentinel for
// one of none), searched in the path, the query (its values also joined, so one split across
// parameters is found), and every header's name and value, each in sentinel_scan_form; then a
// credentialed slot holding something else (kForeignSecret); then a sentinel of `dest`'s own
// credential outside its slot (kSentinelOutsideSlot).
// A header slot: every field of that name (ASCII case-insensitive) must be the template with the
// sentinel, OWS aside; each becomes the template with the secret. A query slot: every parameter
// (separated by '&' or ';', as some servers also split) whose percent-decoded name is the slot's
// must have the sentinel as its percent-decoded value; each value becomes the secret,
// percent-encoded. A credential whose slot is absent is simply not used.
RewriteDecision rewrite_request(const CredentialSet& set, const Destination& dest,
                                const RequestHead& head);

}  // namespace carapace::egress
