// carapace.selftest=NAME: once the agent is ready, it runs /usr/lib/carapace/selftest/NAME (a
// program the root file system provides) through the same exec machinery as an `exec` request,
// copies its output to the console, prints "carapace-agent: selftest NAME exit N" (N is the exit
// status, or 128 + the signal that killed it, or 127 if it could not start) and powers off.
#pragma once

#include <string>

#include "guest/agent/agent_context.h"

namespace carapace::agent {

inline constexpr char kSelftestDir[] = "/usr/lib/carapace/selftest";

// Runs on its own thread; in system mode it ends by powering off.
void start_selftest(AgentContext& ctx, const std::string& name);

}  // namespace carapace::agent
