// exec and kill.
#include <fcntl.h>
#include <signal.h>

#include "common/agent/base64.h"
#include "common/agent/errors.h"
#include "common/agent/wire.h"
#include "guest/agent/exec_runner.h"
#include "guest/agent/ops.h"
#include "guest/agent/spawn.h"

namespace carapace::agent {
namespace {

// Streams output as {"id":N,"stream":"stdout","data":"<base64>"} frames.
class FrameSink : public ExecSink {
 public:
  FrameSink(Replier& out, int fd) : out_(out), fd_(fd) {}
  Status output(Stream s, std::string_view bytes) override {
    return out_.send(
        {{"stream", s == Stream::kStdout ? "stdout" : "stderr"}, {"data", base64_encode(bytes)}});
  }
  int peer_fd() const override { return fd_; }

 private:
  Replier& out_;
  int fd_;
};

Result<std::vector<std::string>> parse_argv(const json& body) {
  auto it = body.find("argv");
  if (it == body.end() || !it->is_array() || it->empty() || it->size() > kMaxArgvEntries)
    return protocol_error(code::kBadRequest, "\"argv\" must be a non-empty array of strings");
  std::vector<std::string> argv;
  for (const auto& a : *it) {
    if (!a.is_string())
      return protocol_error(code::kBadRequest, "\"argv\" must be a non-empty array of strings");
    argv.push_back(a.get<std::string>());
    TRY_STATUS(check_no_nul(argv.back(), "argv"));
  }
  return argv;
}

// The default environment (with the proxy variables while the egress forwarder runs) and the
// request's "env" object applied on top.
Result<std::vector<std::string>> parse_env(AgentContext& ctx, const json& body) {
  std::vector<std::string> env = default_exec_env();
  {
    std::lock_guard lock(ctx.egress_mu);
    if (ctx.egress) {
      for (std::string& e : proxy_env(ctx.egress->port()))
        env.push_back(std::move(e));
      for (const auto& [name, value] : ctx.egress_env)
        env.push_back(name + "=" + value);
    }
  }
  auto it = body.find("env");
  if (it == body.end()) return env;
  if (!it->is_object())
    return protocol_error(code::kBadRequest, "\"env\" must be an object of strings");
  for (const auto& [name, value] : it->items()) {
    if (!value.is_string() || name.empty() || name.find('=') != std::string::npos)
      return protocol_error(code::kBadRequest,
                            "\"env\" must map names without '=' to string values");
    TRY_STATUS(check_no_nul(name, "an env name"));
    std::string v = value.get<std::string>();
    TRY_STATUS(check_no_nul(v, "an env value"));
    const std::string prefix = name + "=";
    std::erase_if(env, [&](const std::string& e) { return e.starts_with(prefix); });
    env.push_back(prefix + v);
  }
  return env;
}

}  // namespace

Status op_exec(AgentContext& ctx, ConnectionState& conn, const Request& req) {
  ExecSpec spec;
  spec.argv = TRY(parse_argv(req.body));
  spec.env = TRY(parse_env(ctx, req.body));
  std::string cwd = TRY(opt_string(req.body, "cwd")).value_or(".");
  spec.stdin_data = TRY(opt_bytes(req.body, "stdin", kMaxFrameBytes));
  spec.timeout_ms = TRY(opt_u64(req.body, "timeout_ms", 0, kMaxTimeoutMs));
  spec.max_output =
      TRY(opt_u64(req.body, "max_output", kDefaultMaxOutputBytes, kMaxOutputLimitBytes));
  // The working directory is resolved like any other path and handed over as a descriptor.
  UniqueFd cwd_fd = TRY(ctx.root.open(cwd, O_PATH | O_DIRECTORY));
  spec.cwd_fd = cwd_fd.get();

  FrameSink sink(req.out, conn.fd);
  ExecOutcome r = TRY(run_exec(*ctx.children, ctx.execs, req.id, spec, sink));
  json done{{"timed_out", r.timed_out},
            {"truncated", r.truncated},
            {"stdout_bytes", r.stdout_bytes},
            {"stderr_bytes", r.stderr_bytes},
            {"duration_ms", r.duration_ms}};
  if (r.exited)
    done["exit_code"] = r.exit_code;
  else
    done["signal"] = r.signal;
  return req.out.send(std::move(done));
}

Status op_kill(AgentContext& ctx, ConnectionState&, const Request& req) {
  uint64_t target = TRY(req_u64(req.body, "target", UINT64_MAX));
  auto sig = static_cast<int>(TRY(opt_u64(req.body, "signal", SIGTERM, 64)));
  if (sig == 0) return protocol_error(code::kBadRequest, "\"signal\" must be 1..64");
  TRY_STATUS(ctx.execs.signal(target, sig));
  return req.out.send({{"ok", true}});
}

}  // namespace carapace::agent
