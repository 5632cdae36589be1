// `carapace sandbox ...` flag parsing (pure, unit tested): which daemon call to make and with
// what. The command itself (sandbox_command.cpp) does the I/O.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "clients/cpp/daemon_client.h"
#include "common/base/result.h"

namespace carapace {

extern const char kSandboxUsage[];

enum class SandboxOp {
  kTemplateCreate,
  kTemplateList,
  kTemplateRemove,
  kCreate,
  kExec,
  kPut,
  kGet,
  kRemove,
  kList,
  kFork,
  kPause,
  kResume,
  kDocument,
  kHelp,
};

struct SandboxArgs {
  std::string socket;  // --socket ("" = $CARAPACE_SOCKET or the default)
  SandboxOp op = SandboxOp::kHelp;
  std::string id;                  // template or sandbox id
  std::vector<std::string> paths;  // put: LOCAL REMOTE; get: REMOTE LOCAL; doc: SPEC OUT
  nlohmann::json body = nlohmann::json::object();  // template create / create: the request body
  sandbox::ExecRequest exec;
  bool stream = false;  // exec --stream
  bool json = false;    // ls --json
  uint32_t count = 1;   // fork --count
  std::string format;   // doc
};

Result<SandboxArgs> parse_sandbox_args(const std::vector<std::string>& args);

// K=V (--env): K non-empty, no '=' in it.
Status parse_env_pair(const std::string& text, std::map<std::string, std::string>& env);

}  // namespace carapace
