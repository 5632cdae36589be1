// Small helpers shared by the agent tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/agent/agent_client.h"
#include "common/agent/base64.h"
#include "common/agent/frame.h"
#include "tests/agent/agent_harness.h"

namespace carapace::testing {

struct ExecRun {
  AgentExecResult result;
  std::string out, err;
};

inline Result<ExecRun> run_exec(AgentClient& c, const std::vector<std::string>& argv,
                                const AgentExecOptions& o = {}) {
  ExecRun run;
  run.result = TRY(c.exec(
      argv, o, [&](std::string_view b) { run.out += b; },
      [&](std::string_view b) { run.err += b; }));
  return run;
}

// The wire code of a failed result ("" when it succeeded).
template <typename T>
std::string code_of(const Result<T>& r) {
  return r.ok() ? std::string() : agent_error_code(r.error());
}

}  // namespace carapace::testing
