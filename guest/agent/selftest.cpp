#include "guest/agent/selftest.h"

#include <fcntl.h>

#include <thread>

#include "common/agent/wire.h"
#include "guest/agent/console.h"
#include "guest/agent/exec_runner.h"
#include "guest/agent/spawn.h"
#include "guest/agent/system_ops.h"

namespace carapace::agent {
namespace {

class ConsoleSink : public ExecSink {
 public:
  Status output(Stream, std::string_view bytes) override {
    console_write(bytes);
    return {};
  }
};

void run_selftest(AgentContext& ctx, const std::string& name) {
  console_line("selftest %s start", name.c_str());
  ExecSpec spec;
  spec.argv = {std::string(kSelftestDir) + "/" + name};
  spec.env = default_exec_env();
  spec.env.push_back("CARAPACE_SELFTEST=" + name);
  spec.cwd_fd = ctx.root.fd();
  spec.max_output = kMaxOutputLimitBytes;
  ConsoleSink sink;
  auto r = run_exec(*ctx.children, ctx.execs, std::nullopt, spec, sink);
  int status = 127;
  if (!r.ok())
    console_line("selftest %s: %s", name.c_str(), r.error().describe().c_str());
  else
    status = r->exited ? r->exit_code : 128 + r->signal;
  console_line("selftest %s exit %d", name.c_str(), status);
  if (ctx.system_mode) power_off();
}

}  // namespace

void start_selftest(AgentContext& ctx, const std::string& name) {
  std::thread([&ctx, name] { run_selftest(ctx, name); }).detach();
}

}  // namespace carapace::agent
