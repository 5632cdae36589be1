// Runs one exec to its end: stdin fed from the request, stdout/stderr streamed to a sink as they
// come (each capped at max_output bytes; the rest is read and dropped so the process never
// blocks on a full pipe - memory stays bounded by one read buffer), a wall-clock timeout that
// SIGKILLs the whole process group, and the exit status from the ChildRegistry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"
#include "guest/agent/child_registry.h"
#include "guest/agent/exec_table.h"

namespace carapace::agent {

enum class Stream { kStdout, kStderr };

class ExecSink {
 public:
  virtual ~ExecSink() = default;
  // Delivers output; an error (the client went away) ends the exec and kills its group.
  virtual Status output(Stream stream, std::string_view bytes) = 0;
  // A socket whose hang-up means nobody waits for the result any more (-1: none).
  virtual int peer_fd() const { return -1; }
};

struct ExecSpec {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // the full environment, "NAME=value"
  int cwd_fd = -1;
  std::string stdin_data;
  uint64_t timeout_ms = 0;  // 0: none
  uint64_t max_output = 0;  // per stream
};

struct ExecOutcome {
  bool exited = false;  // else killed by `signal`
  int exit_code = 0;
  int signal = 0;
  bool timed_out = false;
  bool truncated = false;
  uint64_t stdout_bytes = 0;  // produced, including what was dropped
  uint64_t stderr_bytes = 0;
  uint64_t duration_ms = 0;
};

// `id` (when set) is registered in `execs` for `kill` while the exec runs.
Result<ExecOutcome> run_exec(ChildRegistry& children, ExecTable& execs, std::optional<uint64_t> id,
                             const ExecSpec& spec, ExecSink& sink);

}  // namespace carapace::agent
