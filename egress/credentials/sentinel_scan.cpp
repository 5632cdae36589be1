#include "egress/credentials/sentinel_scan.h"

#include "egress/credentials/ascii_text.h"
#include "egress/credentials/sentinel.h"

namespace carapace::egress {

const char* refusal_reason_name(CredentialRefusalReason reason) {
  switch (reason) {
    case CredentialRefusalReason::kSentinelToOtherHost:
      return "sentinel_to_other_host";
    case CredentialRefusalReason::kUnknownSentinel:
      return "unknown_sentinel";
    case CredentialRefusalReason::kForeignSecret:
      return "foreign_secret";
    case CredentialRefusalReason::kSentinelOutsideSlot:
      return "sentinel_outside_slot";
    case CredentialRefusalReason::kMalformed:
      return "malformed";
  }
  return "malformed";
}

std::string sentinel_scan_form(std::string_view bytes) {
  constexpr int kMaxRounds = 4;
  std::string form(bytes);
  for (int round = 0; round < kMaxRounds; ++round) {
    if (form.find('%') == std::string::npos) break;
    std::string next = ascii::percent_decode(form);
    if (next == form) break;
    form = std::move(next);
  }
  return ascii::lower(form);
}

std::optional<SentinelHit> find_sentinel(const CredentialSet& set, std::string_view bytes) {
  const std::string form = sentinel_scan_form(bytes);
  for (const Credential& c : set.entries()) {
    // The random part alone is enough: it is what makes a sentinel this credential's.
    const std::string_view random = std::string_view(c.sentinel).substr(kSentinelPrefix.size());
    if (form.find(random) != std::string::npos) return SentinelHit{&c};
  }
  if (form.find(kSentinelPrefix) != std::string::npos) return SentinelHit{nullptr};
  return std::nullopt;
}

std::optional<CredentialRefusal> refuse_sentinel_in(const CredentialSet& set, std::string_view what,
                                                    std::string_view bytes) {
  auto hit = find_sentinel(set, bytes);
  if (!hit) return std::nullopt;
  if (hit->credential == nullptr)
    return CredentialRefusal{CredentialRefusalReason::kUnknownSentinel,
                             std::string(what) +
                                 " holds a credential sentinel of no live "
                                 "credential; refused as an exfiltration attempt",
                             ""};
  const std::string& env = hit->credential->spec.env;
  return CredentialRefusal{CredentialRefusalReason::kSentinelToOtherHost,
                           std::string(what) + " holds the sentinel of credential " + env +
                               "; refused as an exfiltration attempt",
                           env};
}

}  // namespace carapace::egress
