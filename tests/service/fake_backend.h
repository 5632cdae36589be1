// A fake isolation back end for the daemon's tests: each instance is a real host agent
// (carapace-agent-host --listen unix:PATH --root DIR --token HEX), so exec, files and documents go
// through the real protocol, while "isolation" is just a process. Pause/resume are SIGSTOP and
// SIGCONT (a stopped agent is also how tests make one hang, docs/security.md #31).
//
// Instance folders are <ctx.dir>/inst-<n>/ (root/, agent.sock, agent.log); describe() lists the
// folder under "files" so the daemon's crash recovery can remove it.
#pragma once

#include <atomic>
#include <string>

#include "daemon/core/sandbox_service.h"

namespace carapace::testing {

struct FakeBackendOptions {
  std::string agent_exe = CARAPACE_AGENT_HOST;
  bool can_fork = true;  // false: fork() says "cannot fork" (as the process back end does)
};

// Counts every fake instance alive in this process (all back ends together), so tests can
// check nothing leaked.
extern std::atomic<int> g_fake_instances;
// Sanitizer reports found in the agents' logs when their instances were destroyed.
extern std::atomic<int> g_agent_sanitizer_reports;

service::BackendFactory fake_backend_factory(FakeBackendOptions options = {});

}  // namespace carapace::testing
