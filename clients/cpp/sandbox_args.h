// `carapace sandbox ...` flag parsing (pure, unit tested): which daemon call to make and with
// what. The command itself (sandbox_command.cpp) does the I/O.
#pragma once

#include <cstdint>
#include <functional>
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
  kNetwork,
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
  // The request body of template create, create, fork (without its count) and network.
  nlohmann::json body = nlohmann::json::object();
  sandbox::ExecRequest exec;
  bool stream = false;  // exec --stream
  bool json = false;    // ls --json
  uint32_t count = 1;   // fork --count
  std::string format;   // doc
};

Result<SandboxArgs> parse_sandbox_args(const std::vector<std::string>& args);

// --allow-host RULE, --deny-host RULE, --credential SPEC, --upstream ALIAS=ORIGIN (all
// repeatable; credential_args.h) and `off_flag` (--no-internet, or --off for `sandbox network`),
// shared by sandbox create, fork and network and by `carapace mcp`. True when `flag` is one of
// them; `value` takes the flag's argument.
Result<bool> parse_network_flag(const std::string& flag, const std::string& off_flag,
                                const std::function<Result<std::string>()>& value,
                                sandbox::NetworkRequest& out);
// Refuses what the daemon could only refuse or ignore: the off flag with rules, credentials or
// upstreams, deny rules without an allow rule (deny rules only narrow what allow rules admit, so
// alone they would leave the sandbox without a way out while looking like a policy), and
// credentials or upstreams without an allow rule (no internet, so nowhere to use them).
Status check_network_flags(const sandbox::NetworkRequest& network, const std::string& off_flag);

// K=V (--env): K non-empty, no '=' in it.
Status parse_env_pair(const std::string& text, std::map<std::string, std::string>& env);

}  // namespace carapace
