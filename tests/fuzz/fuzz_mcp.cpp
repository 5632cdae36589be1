// Fuzzes the client side of the sandbox API: the MCP JSON-RPC server of `carapace mcp`
// (clients/mcp), whose every stdin line comes from a model's agent loop, over a fake sandbox
// whose answers (command output, file contents, documents) are fuzzer bytes too; and the
// parsers of the daemon's answers in clients/cpp (SSE stream, exec result, error bodies).
//
// Input: [mode:1] then
//   mode % 3 == 0 (MCP): [fail:1][len:2] + len bytes the fake sandbox hands back, then the
//     lines. Each line goes to McpServer::handle_line; every answer must be one line of JSON
//     with "jsonrpc": "2.0" and exactly one of "result" and "error". fail bit n makes the
//     fake's n-th operation fail.
//   mode % 3 == 1 (SSE): [max_event:2][npieces:1] npieces x [len:1], then the stream, fed in
//     those pieces; the data of every event goes through parse_exec_result as a JSON value.
//   mode % 3 == 2: [status:2] then a body: parse_exec_result of it as JSON, and api_error of it
//     as an HTTP answer.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "clients/cpp/daemon_client.h"
#include "clients/cpp/sse_parser.h"
#include "clients/mcp/mcp_server.h"
#include "tests/fuzz/fuzz_memory.h"
#include "tests/fuzz/fuzz_modes.h"

using namespace carapace;
using carapace::fuzz::Input;
using nlohmann::json;

namespace {

class FakeSandbox : public mcp::SandboxOps {
 public:
  FakeSandbox(uint8_t fail, std::string answer) : fail_(fail), answer_(std::move(answer)) {}

  Result<sandbox::ExecResult> run_command(const std::string&, const std::string&,
                                          uint64_t) override {
    if (fail_ & 1) return make_error("fake: the daemon refused");
    sandbox::ExecResult r;
    if (fail_ & 2) {
      r.signal = static_cast<int>(answer_.size() % 64);
    } else {
      r.exit_code = static_cast<int>(answer_.size() % 256);
    }
    r.stdout_data = answer_;
    r.stderr_data = answer_.substr(answer_.size() / 2);
    r.timed_out = fail_ & 4;
    r.truncated = fail_ & 8;
    return r;
  }
  Status write_file(const std::string&, const std::string&) override {
    if (fail_ & 16) return as_invalid_input(make_error("fake: path refused"));
    return {};
  }
  Result<std::string> read_file(const std::string&) override {
    if (fail_ & 32) return make_error("fake: not found");
    return answer_;
  }
  Result<std::string> generate_document(const json&, const std::string&) override {
    if (fail_ & 64) return make_error("fake: docgen failed");
    return answer_;
  }
  Result<json> set_network(const sandbox::NetworkRequest& network) override {
    if (fail_ & 128) return as_invalid_input(make_error("fake: network.allow_hosts[0]: bad rule"));
    return json({{"id", "sb-0"}, {"network", sandbox::network_json(network)}});
  }

 private:
  uint8_t fail_;
  std::string answer_;
};

void fuzz_server(Input& in) {
  const uint8_t fail = in.take<uint8_t>();
  const size_t len = std::min<size_t>(in.take<uint16_t>(), in.size());
  FakeSandbox ops(fail, std::string(reinterpret_cast<const char*>(in.data()), len));
  in = Input(in.data() + len, in.size() - len);
  mcp::McpOptions options;  // no out_dir: documents come back inline
  options.network_tool = true;
  mcp::McpServer server(ops, options);

  std::string_view lines(reinterpret_cast<const char*>(in.data()), in.size());
  while (!lines.empty()) {
    const size_t nl = lines.find('\n');
    const std::string_view line = lines.substr(0, nl);
    lines.remove_prefix(nl == std::string_view::npos ? lines.size() : nl + 1);
    auto answer = server.handle_line(line);
    if (!answer) continue;
    if (answer->find('\n') != std::string::npos) __builtin_trap();
    json j = json::parse(*answer, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || j.value("jsonrpc", "") != "2.0" ||
        j.contains("result") == j.contains("error"))
      __builtin_trap();
  }
}

void fuzz_sse(Input& in) {
  const size_t max_event = in.take<uint16_t>();
  const size_t npieces = in.take<uint8_t>() % 16;
  std::vector<size_t> pieces;
  for (size_t i = 0; i < npieces; ++i)
    pieces.push_back(in.take<uint8_t>());
  std::string_view stream(reinterpret_cast<const char*>(in.data()), in.size());
  sandbox::SseParser parser(max_event);
  for (size_t i = 0; !stream.empty(); ++i) {
    const size_t n = i < pieces.size() ? std::min(pieces[i], stream.size()) : stream.size();
    auto events = parser.feed(stream.substr(0, n));
    stream.remove_prefix(n);
    if (!events.ok()) break;
    for (const auto& e : *events) {
      if (e.data.size() > max_event) __builtin_trap();
      json j = json::parse(e.data, nullptr, /*allow_exceptions=*/false);
      if (!j.is_discarded()) (void)sandbox::parse_exec_result(j);
    }
  }
}

void fuzz_answers(Input& in) {
  http::HttpResponse r;
  r.status = 300 + in.take<uint16_t>() % 300;
  r.body.assign(reinterpret_cast<const char*>(in.data()), in.size());
  r.headers.add("Content-Type", "application/json");
  json j = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) (void)sandbox::parse_exec_result(j);
  (void)sandbox::api_error(r);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  set_log_level(LogLevel::kError);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::run_one_mode(data, size, {fuzz_server, fuzz_sse, fuzz_answers});
}
