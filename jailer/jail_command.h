// `carapace jail`: runs a binary (normally `carapace run ...`) inside a jail; see kJailUsage and
// jailer/README.md.
#pragma once

#include <string>
#include <vector>

namespace carapace {

int cmd_jail(const std::vector<std::string>& args);

}  // namespace carapace
