// The egress proxy's control routes, for the daemon that owns it: the policy read and replaced
// live, and the counters.
#pragma once

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "common/http/router.h"
#include "egress/proxy/egress_proxy.h"

namespace carapace::egress {

nlohmann::json stats_to_json(const EgressStats& s);

// GET /policy, PUT /policy (the whole policy; 400 naming the bad rule, the old one kept),
// GET /stats, and GET/PUT /credentials (credential_routes.h).
Status add_control_routes(http::Router& router, EgressProxy& proxy);

}  // namespace carapace::egress
