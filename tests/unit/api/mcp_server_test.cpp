// The MCP server's JSON-RPC layer and tools against a fake sandbox (clients/mcp).
#include "clients/mcp/mcp_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <thread>

#include "common/agent/base64.h"

namespace carapace::mcp {
namespace {

using nlohmann::json;

class FakeSandbox : public SandboxOps {
 public:
  Result<sandbox::ExecResult> run_command(const std::string& command, const std::string& cwd,
                                          uint64_t timeout_ms) override {
    commands.push_back(command);
    last_cwd = cwd;
    last_timeout_ms = timeout_ms;
    if (fail) return as_invalid_input(make_error("sandbox sb-x: not found"));
    return exec_result;
  }
  Status write_file(const std::string& path, const std::string& data) override {
    if (fail) return make_error("disk full");
    files[path] = data;
    return ok_status();
  }
  Result<std::string> read_file(const std::string& path) override {
    auto it = files.find(path);
    if (it == files.end()) return as_invalid_input(make_error(path + ": no such file"));
    return it->second;
  }
  Result<std::string> generate_document(const json& spec, const std::string& format) override {
    if (!spec.contains("title")) return as_invalid_input(make_error("spec: 'title' is required"));
    return "%DOC-" + format + "%";
  }
  Result<json> set_network(const sandbox::NetworkRequest& network) override {
    networks.push_back(sandbox::network_json(network));
    if (fail) return as_invalid_input(make_error("network.allow_hosts[0]: 'a b' is not a host"));
    json view = {{"internet", network.internet.value_or(!network.allow_hosts.empty())},
                 {"allow_hosts", network.allow_hosts},
                 {"deny_hosts", network.deny_hosts}};
    view["proxy"] = view["internet"] ? json("http://127.0.0.1:3128") : json(nullptr);
    if (view_credentials) view["credentials"] = *view_credentials;
    return json({{"id", "sb-1"}, {"state", "running"}, {"network", view}});
  }

  bool fail = false;
  sandbox::ExecResult exec_result;
  std::vector<std::string> commands;
  std::string last_cwd;
  uint64_t last_timeout_ms = 0;
  std::map<std::string, std::string> files;
  std::vector<json> networks;            // what set_network was asked, as the API's network object
  std::optional<json> view_credentials;  // the view's "credentials", when set
};

class McpServerTest : public testing::Test {
 protected:
  json call(const json& request) {
    auto line = server_.handle_line(request.dump());
    if (!line) return json();
    return json::parse(*line);
  }
  json raw(std::string_view line) {
    auto out = server_.handle_line(line);
    if (!out) return json();
    EXPECT_EQ(out->find('\n'), std::string::npos);
    return json::parse(*out);
  }
  json tool(const std::string& name, const json& args) {
    return call({{"jsonrpc", "2.0"},
                 {"id", 7},
                 {"method", "tools/call"},
                 {"params", {{"name", name}, {"arguments", args}}}});
  }
  static std::string text_of(const json& response) {
    return response["result"]["content"][0]["text"].get<std::string>();
  }

  FakeSandbox box_;
  McpOptions options_;
  McpServer server_{box_, options_};
};

TEST_F(McpServerTest, Initialize) {
  json r = call({{"jsonrpc", "2.0"},
                 {"id", 1},
                 {"method", "initialize"},
                 {"params",
                  {{"protocolVersion", "2024-11-05"},
                   {"capabilities", json::object()},
                   {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}});
  EXPECT_EQ(r["jsonrpc"], "2.0");
  EXPECT_EQ(r["id"], 1);
  EXPECT_EQ(r["result"]["protocolVersion"], "2024-11-05");
  EXPECT_TRUE(r["result"]["capabilities"]["tools"].is_object());
  EXPECT_EQ(r["result"]["serverInfo"]["name"], "carapace");
  // An unknown version gets ours.
  r = call({{"jsonrpc", "2.0"},
            {"id", "a"},
            {"method", "initialize"},
            {"params", {{"protocolVersion", "1999-01-01"}}}});
  EXPECT_EQ(r["id"], "a");
  EXPECT_EQ(r["result"]["protocolVersion"], kProtocolVersion);
}

TEST_F(McpServerTest, NotificationsAreNeverAnswered) {
  EXPECT_FALSE(server_.handle_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  EXPECT_FALSE(server_.handle_line(R"({"jsonrpc":"2.0","method":"no/such"})"));
  EXPECT_FALSE(server_.handle_line(R"({"jsonrpc":"2.0","method":"tools/call","params":{}})"));
  EXPECT_FALSE(server_.handle_line(R"({"jsonrpc":"2.0","id":3,"result":{}})"));  // a response
  EXPECT_FALSE(server_.handle_line("   "));
}

TEST_F(McpServerTest, PingAndToolsList) {
  json r = call({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "ping"}});
  EXPECT_EQ(r["result"], json::object());
  r = call({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "tools/list"}});
  std::set<std::string> names;
  for (const json& t : r["result"]["tools"]) {
    names.insert(t["name"].get<std::string>());
    EXPECT_TRUE(t["description"].is_string());
    EXPECT_EQ(t["inputSchema"]["type"], "object");
    EXPECT_TRUE(t["inputSchema"]["required"].is_array());
  }
  EXPECT_EQ(names,
            (std::set<std::string>{"run_command", "write_file", "read_file", "generate_document"}));
}

// The network tool exists only when the operator offers it: the model must not be able to widen
// its own sandbox's egress unless it was allowed to.
TEST_F(McpServerTest, NoNetworkToolUnlessOffered) {
  json r = call({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "tools/list"}});
  for (const json& t : r["result"]["tools"])
    EXPECT_NE(t["name"], "set_sandbox_network");
  r = tool("set_sandbox_network", {{"allow_hosts", {"*"}}});
  EXPECT_EQ(r["error"]["code"], kInvalidParams);
  EXPECT_TRUE(box_.networks.empty());
}

class McpNetworkToolTest : public testing::Test {
 protected:
  static McpOptions with_network_tool() {
    McpOptions o;
    o.network_tool = true;
    return o;
  }
  json tool(const std::string& name, const json& args) {
    json req = {{"jsonrpc", "2.0"}, {"id", 8}, {"method", "tools/call"}};
    req["params"] = {{"name", name}, {"arguments", args}};
    return json::parse(server_.handle_line(req.dump()).value());
  }
  static std::string text_of(const json& response) {
    return response["result"]["content"][0]["text"].get<std::string>();
  }

  FakeSandbox box_;
  McpServer server_{box_, with_network_tool()};
};

TEST_F(McpNetworkToolTest, ListedWithItsSchema) {
  json list =
      json::parse(server_.handle_line(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})").value());
  const json* found = nullptr;
  for (const json& t : list["result"]["tools"])
    if (t["name"] == "set_sandbox_network") found = &t;
  ASSERT_NE(found, nullptr) << list;
  const json& props = (*found)["inputSchema"]["properties"];
  EXPECT_EQ(props["allow_hosts"]["type"], "array");
  EXPECT_EQ(props["allow_hosts"]["items"]["type"], "string");
  EXPECT_EQ(props["allow_hosts"]["maxItems"], 256);
  EXPECT_EQ(props["deny_hosts"]["type"], "array");
  EXPECT_EQ(props["internet"]["type"], "boolean");
  EXPECT_EQ((*found)["inputSchema"]["additionalProperties"], false);
  EXPECT_EQ(list["result"]["tools"].size(), 5u);
}

TEST_F(McpNetworkToolTest, SetsThePolicyAndShowsIt) {
  json r = tool("set_sandbox_network", {{"allow_hosts", {"pypi.org:443", "*.pythonhosted.org"}},
                                        {"deny_hosts", {"evil.pypi.org"}}});
  ASSERT_FALSE(r["result"]["isError"].get<bool>()) << r;
  ASSERT_EQ(box_.networks.size(), 1u);
  EXPECT_EQ(box_.networks[0], json({{"allow_hosts", {"pypi.org:443", "*.pythonhosted.org"}},
                                    {"deny_hosts", {"evil.pypi.org"}}}));
  EXPECT_NE(text_of(r).find("http://127.0.0.1:3128"), std::string::npos) << text_of(r);
  EXPECT_NE(text_of(r).find("evil.pypi.org"), std::string::npos);
  r = tool("set_sandbox_network", {{"internet", false}});
  ASSERT_FALSE(r["result"]["isError"].get<bool>()) << r;
  EXPECT_EQ(box_.networks[1], json({{"internet", false}}));
  EXPECT_NE(text_of(r).find("\"internet\":false"), std::string::npos) << text_of(r);
  // The daemon's refusal (a bad rule) is the model's to read, not a protocol error.
  box_.fail = true;
  r = tool("set_sandbox_network", {{"allow_hosts", {"a b"}}});
  EXPECT_TRUE(r["result"]["isError"].get<bool>());
  EXPECT_NE(text_of(r).find("network.allow_hosts[0]"), std::string::npos);
}

// docs/security.md #26: arguments of the wrong shape are -32602 and nothing reaches the daemon.
TEST_F(McpNetworkToolTest, ArgumentsAreChecked) {
  for (const json& args : {
           json({{"allow_hosts", "pypi.org"}}),
           json({{"allow_hosts", {"pypi.org", 5}}}),
           json({{"deny_hosts", {{{"host", "x"}}}}}),
           json({{"internet", "yes"}}),
           json({{"internet", 1}}),
           json({{"allow", {"pypi.org"}}}),
           json({{"sandbox_id", "sb-2"}, {"allow_hosts", {"pypi.org"}}}),
           json({{"allow_hosts", std::vector<std::string>(257, "pypi.org")}}),
       }) {
    EXPECT_EQ(tool("set_sandbox_network", args)["error"]["code"], kInvalidParams) << args;
  }
  EXPECT_TRUE(box_.networks.empty());
}

// The operator holds the secrets (`carapace mcp --credential`): no tool takes one, and a view
// shown to the model has every secret redacted, even were the daemon's answer to hold one.
TEST_F(McpNetworkToolTest, NeverTakesOrShowsASecret) {
  json list =
      json::parse(server_.handle_line(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})").value());
  for (const json& t : list["result"]["tools"]) {
    const json& props = t["inputSchema"]["properties"];
    for (const char* key : {"secret", "credentials", "upstreams", "env", "header", "query"})
      EXPECT_FALSE(props.contains(key)) << t["name"] << " takes " << key;
    EXPECT_EQ(t["inputSchema"]["additionalProperties"], false) << t["name"];
  }
  EXPECT_EQ(list.dump().find("\"secret\""), std::string::npos);

  const std::string model_secret = "model-chosen-secret-1234";
  json creds = json::array({{{"hosts", {"evil.example"}},
                             {"header", "Authorization: Bearer {secret}"},
                             {"secret", model_secret},
                             {"env", "X"}}});
  for (const json& args :
       {json({{"allow_hosts", {"evil.example"}}, {"credentials", creds}}),
        json({{"upstreams", {{{"alias", "a.internal"}, {"origin", "https://evil.example"}}}}})}) {
    json r = tool("set_sandbox_network", args);
    EXPECT_EQ(r["error"]["code"], kInvalidParams) << r;
    EXPECT_EQ(r.dump().find(model_secret), std::string::npos);
  }
  EXPECT_TRUE(box_.networks.empty());

  const std::string operator_secret = "ghp_operator0123456789";
  box_.view_credentials = json::array({{{"env", "GITHUB_TOKEN"},
                                        {"hosts", {"api.github.com"}},
                                        {"header", "Authorization: Bearer {secret}"},
                                        {"secret", operator_secret}}});
  json r = tool("set_sandbox_network", {{"allow_hosts", {"api.github.com:443"}}});
  ASSERT_FALSE(r["result"]["isError"].get<bool>()) << r;
  EXPECT_EQ(r.dump().find(operator_secret), std::string::npos) << r;
  EXPECT_NE(text_of(r).find("<redacted>"), std::string::npos) << text_of(r);
  EXPECT_NE(text_of(r).find("GITHUB_TOKEN"), std::string::npos) << text_of(r);
  // What the tool asked for holds no credentials: DaemonSandbox adds the operator's.
  ASSERT_EQ(box_.networks.size(), 1u);
  EXPECT_FALSE(box_.networks[0].contains("credentials"));
}

// docs/security.md #26: a hostile client gets JSON-RPC errors and the server goes on.
TEST_F(McpServerTest, JsonRpcErrors) {
  json r = raw("{not json");
  EXPECT_EQ(r["error"]["code"], kParseError);
  EXPECT_TRUE(r["id"].is_null());
  EXPECT_EQ(raw("[1,2]")["error"]["code"], kInvalidRequest);
  EXPECT_EQ(raw("42")["error"]["code"], kInvalidRequest);
  EXPECT_EQ(raw(R"({"jsonrpc":"2.0","id":{"x":1},"method":"ping"})")["error"]["code"],
            kInvalidRequest);
  EXPECT_EQ(raw(R"({"jsonrpc":"1.0","id":1,"method":"ping"})")["error"]["code"], kInvalidRequest);
  EXPECT_EQ(raw(R"({"jsonrpc":"2.0","id":1,"method":5})")["error"]["code"], kInvalidRequest);
  EXPECT_EQ(raw(R"({"jsonrpc":"2.0","id":1})")["error"]["code"], kInvalidRequest);
  r = raw(R"({"jsonrpc":"2.0","id":9,"method":"resources/list"})");
  EXPECT_EQ(r["error"]["code"], kMethodNotFound);
  EXPECT_EQ(r["id"], 9);
  EXPECT_EQ(raw(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"})")["error"]["code"],
            kInvalidParams);
  EXPECT_EQ(raw(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})")["error"]["code"],
            kInvalidParams);
  // Duplicate keys, invalid UTF-8 and absurd nesting are parse errors, not crashes.
  EXPECT_EQ(raw(R"({"jsonrpc":"2.0","id":1,"id":2,"method":"ping"})")["error"]["code"],
            kParseError);
  EXPECT_EQ(raw("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xff\"}")["error"]["code"],
            kParseError);
  EXPECT_EQ(raw(std::string(10000, '[') + std::string(10000, ']'))["error"]["code"], kParseError);
}

TEST_F(McpServerTest, ToolArgumentsAreChecked) {
  EXPECT_EQ(tool("no_such_tool", json::object())["error"]["code"], kInvalidParams);
  EXPECT_EQ(tool("run_command", json::object())["error"]["code"], kInvalidParams);
  EXPECT_EQ(tool("run_command", {{"command", 5}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(tool("run_command", {{"command", ""}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(tool("run_command", {{"command", "ls"}, {"timeout_ms", -1}})["error"]["code"],
            kInvalidParams);
  EXPECT_EQ(tool("run_command", {{"command", "ls"}, {"shell", "bash"}})["error"]["code"],
            kInvalidParams);
  EXPECT_EQ(tool("write_file", {{"path", "a"}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(tool("write_file",
                 {{"path", "a"}, {"content", "!!"}, {"encoding", "base64"}})["error"]["code"],
            kInvalidParams);
  EXPECT_EQ(tool("write_file",
                 {{"path", "a"}, {"content", "x"}, {"encoding", "latin1"}})["error"]["code"],
            kInvalidParams);
  EXPECT_EQ(tool("read_file", {{"path", json::array()}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(tool("generate_document", {{"spec", "x"}, {"format", "docx"}})["error"]["code"],
            kInvalidParams);
  EXPECT_EQ(
      tool("generate_document", {{"spec", json::object()}, {"format", "odt"}})["error"]["code"],
      kInvalidParams);
  EXPECT_TRUE(box_.commands.empty());
}

TEST_F(McpServerTest, RunCommand) {
  box_.exec_result.exit_code = 0;
  box_.exec_result.stdout_data = "hello\n";
  json r = tool("run_command", {{"command", "echo hello"}, {"cwd", "sub"}, {"timeout_ms", 500}});
  EXPECT_EQ(r["id"], 7);
  EXPECT_FALSE(r["result"]["isError"].get<bool>());
  EXPECT_NE(text_of(r).find("exit code 0"), std::string::npos);
  EXPECT_NE(text_of(r).find("hello\n"), std::string::npos);
  EXPECT_EQ(box_.commands, std::vector<std::string>{"echo hello"});
  EXPECT_EQ(box_.last_cwd, "sub");
  EXPECT_EQ(box_.last_timeout_ms, 500u);

  box_.exec_result.exit_code = 3;
  box_.exec_result.stderr_data = "bad";
  r = tool("run_command", {{"command", "false"}});
  EXPECT_TRUE(r["result"]["isError"].get<bool>());
  EXPECT_NE(text_of(r).find("exit code 3"), std::string::npos);

  box_.exec_result.exit_code.reset();
  box_.exec_result.signal = 9;
  r = tool("run_command", {{"command", "kill -9 $$"}});
  EXPECT_NE(text_of(r).find("signal 9"), std::string::npos);

  // A failure of the sandbox itself is a tool result the model sees, not a protocol error.
  box_.fail = true;
  r = tool("run_command", {{"command", "ls"}});
  EXPECT_TRUE(r["result"]["isError"].get<bool>());
  EXPECT_NE(text_of(r).find("not found"), std::string::npos);
}

TEST_F(McpServerTest, WriteAndReadFiles) {
  json r = tool("write_file", {{"path", "a.txt"}, {"content", "héllo"}});
  EXPECT_FALSE(r["result"]["isError"].get<bool>()) << r;
  EXPECT_EQ(box_.files["a.txt"], "héllo");
  std::string binary("\x00\xff\x80zz", 5);
  r = tool("write_file",
           {{"path", "b.bin"}, {"content", agent::base64_encode(binary)}, {"encoding", "base64"}});
  EXPECT_FALSE(r["result"]["isError"].get<bool>());
  EXPECT_EQ(box_.files["b.bin"], binary);

  r = tool("read_file", {{"path", "a.txt"}});
  EXPECT_EQ(text_of(r), "héllo");
  r = tool("read_file", {{"path", "b.bin"}});
  EXPECT_TRUE(r["result"]["isError"].get<bool>());  // not UTF-8: ask for base64
  r = tool("read_file", {{"path", "b.bin"}, {"encoding", "base64"}});
  EXPECT_EQ(agent::base64_decode(text_of(r)).value_or(""), binary);
  r = tool("read_file", {{"path", "missing"}});
  EXPECT_TRUE(r["result"]["isError"].get<bool>());
  EXPECT_NE(text_of(r).find("no such file"), std::string::npos);
}

TEST_F(McpServerTest, GenerateDocumentInline) {
  json r = tool("generate_document",
                {{"spec", {{"title", "T"}}}, {"format", "docx"}, {"path", "out/t.docx"}});
  ASSERT_FALSE(r["result"]["isError"].get<bool>()) << r;
  const json& content = r["result"]["content"];
  ASSERT_EQ(content.size(), 2u);
  EXPECT_NE(content[0]["text"].get<std::string>().find("out/t.docx"), std::string::npos);
  EXPECT_EQ(content[1]["type"], "resource");
  EXPECT_EQ(agent::base64_decode(content[1]["resource"]["blob"].get<std::string>()).value_or(""),
            "%DOC-docx%");
  EXPECT_NE(content[1]["resource"]["mimeType"].get<std::string>().find("wordprocessingml"),
            std::string::npos);
  EXPECT_EQ(box_.files["out/t.docx"], "%DOC-docx%");
  // An invalid spec: docgen's message as a tool error.
  r = tool("generate_document", {{"spec", json::object()}, {"format", "pdf"}});
  EXPECT_TRUE(r["result"]["isError"].get<bool>());
  EXPECT_NE(text_of(r).find("title"), std::string::npos);
}

// docs/security.md #28: a path from the model never chooses where a file lands on the host.
TEST(McpServerOutDir, GenerateDocumentSavesOnTheHostUnderItsOwnName) {
  char tmpl[] = "/tmp/mcp-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  FakeSandbox box;
  McpServer server(box, McpOptions{dir, "0"});
  json args = {{"spec", {{"title", "T"}}}, {"format", "pdf"}, {"path", "../../x"}};
  json req = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"}};
  req["params"] = {{"name", "generate_document"}, {"arguments", args}};
  json r = json::parse(server.handle_line(req.dump()).value());
  ASSERT_FALSE(r["result"]["isError"].get<bool>()) << r;
  std::string file = dir + "/document-1.pdf";
  EXPECT_NE(r["result"]["content"][0]["text"].get<std::string>().find(file), std::string::npos);
  std::ifstream in(file, std::ios::binary);
  std::string got((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(got, "%DOC-pdf%");
  // The model's path went to the sandbox only (where the daemon refuses '..').
  EXPECT_EQ(box.files.count("../../x"), 1u);
  EXPECT_FALSE(std::filesystem::exists(dir + "/../../x"));
  std::filesystem::remove_all(dir);
}

// docs/security.md #26: random lines, and mutations of valid requests, never crash the server;
// every answer is one line of JSON with the JSON-RPC envelope.
TEST_F(McpServerTest, SurvivesRandomInput) {
  std::mt19937 rng(42);
  const std::vector<std::string> seeds = {
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"a","content":"QQ==","encoding":"base64"}}})",
      R"({"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"generate_document","arguments":{"spec":{"title":"t"},"format":"pdf"}}})",
      R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2024-11-05"}})",
  };
  for (int i = 0; i < 20000; ++i) {
    std::string line = seeds[static_cast<size_t>(i) % seeds.size()];
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !line.empty(); ++e) {
      size_t at = rng() % line.size();
      switch (rng() % 3) {
        case 0:
          line[at] = static_cast<char>(rng() % 256);
          break;
        case 1:
          line.erase(at, 1 + rng() % 8);
          break;
        default:
          line.insert(at, 1, "{}[]\",:0-e\x00"[rng() % 12]);
          break;
      }
    }
    auto out = server_.handle_line(line);
    if (!out) continue;
    ASSERT_EQ(out->find('\n'), std::string::npos) << line;
    auto reply = json::parse(*out, nullptr, false);
    ASSERT_FALSE(reply.is_discarded()) << line;
    EXPECT_EQ(reply["jsonrpc"], "2.0");
    EXPECT_TRUE(reply.contains("result") != reply.contains("error")) << *out;
  }
}

// The stdio loop: lines split across reads, several in one read, a last line without newline,
// and an oversized line refused without ending the session.
TEST(McpServerServe, LinesOverAPipe) {
  FakeSandbox box;
  McpServer server(box, McpOptions{});
  int in[2], out[2];
  ASSERT_EQ(pipe(in), 0);
  ASSERT_EQ(pipe(out), 0);
  std::thread writer([&] {
    auto put = [&](std::string_view s) {
      while (!s.empty()) {
        ssize_t n = write(in[1], s.data(), s.size());
        if (n <= 0) return;
        s.remove_prefix(static_cast<size_t>(n));
      }
    };
    put("{\"jsonrpc\":\"2.0\",\"id\":1,\"met");
    put("hod\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    put(std::string(kMaxLineBytes + 100, 'x') + "\n");
    put("garbage\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
    close(in[1]);
  });
  std::string collected;
  std::thread reader([&] {
    char buf[4096];
    ssize_t n;
    while ((n = read(out[0], buf, sizeof buf)) > 0)
      collected.append(buf, static_cast<size_t>(n));
  });
  std::atomic<bool> stop{false};
  Status s = server.serve(in[0], out[1], stop);
  close(out[1]);
  writer.join();
  reader.join();
  close(in[0]);
  close(out[0]);
  ASSERT_TRUE(s.ok()) << s.error().describe();
  std::vector<json> replies;
  size_t start = 0, nl;
  while ((nl = collected.find('\n', start)) != std::string::npos) {
    replies.push_back(json::parse(collected.substr(start, nl - start)));
    start = nl + 1;
  }
  EXPECT_EQ(start, collected.size());
  ASSERT_EQ(replies.size(), 4u) << collected.substr(0, 2000);
  EXPECT_EQ(replies[0]["id"], 1);
  EXPECT_EQ(replies[1]["error"]["code"], kInvalidRequest);  // too long
  EXPECT_EQ(replies[2]["error"]["code"], kParseError);      // garbage
  EXPECT_EQ(replies[3]["id"], 2);
}

}  // namespace
}  // namespace carapace::mcp
