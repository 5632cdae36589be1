// The policy as JSON, the one shape the daemon's API, the proxy's control socket and a template
// record share: {"allow_hosts": ["pypi.org:443", "*.pythonhosted.org"], "deny_hosts": [...]}.
#pragma once

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "egress/policy/egress_policy.h"

namespace carapace::egress {

// Both keys optional (missing: empty list); any other key, a non-array or a non-string entry is
// refused, naming the field (`where` prefixes the message, e.g. "network").
Result<EgressPolicy> policy_from_json(const nlohmann::json& j, const std::string& where);

nlohmann::json policy_to_json(const EgressPolicy& policy);

}  // namespace carapace::egress
