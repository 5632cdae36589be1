// `carapace egress-proxy`: one sandbox's egress proxy as its own process, with an optional
// control socket for the daemon (GET/PUT /policy, GET /stats).
#pragma once

#include <string>
#include <vector>

namespace carapace {

int cmd_egress_proxy(const std::vector<std::string>& args);

}  // namespace carapace
