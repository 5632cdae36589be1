// The sandbox daemon's API client (clients/cpp) against a fake daemon on a Unix socket, its SSE
// reader, and the sandbox behind `carapace mcp` (clients/mcp/daemon_sandbox) over that client.
#include "clients/cpp/daemon_client.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>

#include "clients/cpp/sse_parser.h"
#include "clients/mcp/daemon_sandbox.h"
#include "common/agent/base64.h"
#include "common/http/json_util.h"
#include "common/http/response_writer.h"
#include "common/http/router.h"
#include "tests/unit/api/http_test_util.h"

namespace carapace::sandbox {
namespace {

using nlohmann::json;

TEST(SseParser, EventsAcrossPiecesAndLineEndings) {
  SseParser p;
  std::string stream =
      ": keep-alive\n\nevent: stdout\ndata: {\"data\":\"aGk=\"}\n\n"
      "event: exit\r\ndata: {\"exit_code\": 0,\r\ndata: \"signal\": null}\r\n\r\n";
  std::vector<SseEvent> all;
  for (char c : stream) {  // one byte at a time: the worst split
    auto evs = p.feed(std::string_view(&c, 1));
    ASSERT_TRUE(evs.ok());
    for (auto& e : *evs)
      all.push_back(e);
  }
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].event, "stdout");
  EXPECT_EQ(all[0].data, "{\"data\":\"aGk=\"}");
  EXPECT_EQ(all[1].event, "exit");
  EXPECT_EQ(all[1].data, "{\"exit_code\": 0,\n\"signal\": null}");
}

TEST(SseParser, BoundedEvents) {
  SseParser p(1024);
  auto r = p.feed("data: " + std::string(2000, 'x'));
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(p.feed("\n\n").ok());  // stays failed
  SseParser q(1024);
  for (int i = 0; i < 10; ++i) {  // many short lines of one event add up
    auto s = q.feed("data: " + std::string(200, 'y') + "\n");
    if (!s.ok()) return;
  }
  ADD_FAILURE() << "an event of 2000 bytes in lines passed a 1024-byte limit";
}

// A whole event in one piece is held to the limit too, not only one that arrives line by line.
TEST(SseParser, EventInOnePieceIsBounded) {
  SseParser p(8);
  EXPECT_FALSE(p.feed("data: 0123456789\ndata: x\r\n\r\n").ok());
  SseParser q(8);
  auto ok = q.feed("data: 01234567\n\n");  // exactly at the limit
  ASSERT_TRUE(ok.ok());
  ASSERT_EQ(ok->size(), 1u);
  EXPECT_EQ((*ok)[0].data, "01234567");
}

// A daemon answer of the wrong shape is an error value, never an exception.
TEST(ExecResult, MistypedTimedOutIsAnError) {
  EXPECT_FALSE(parse_exec_result(json{{"timed_out", "yes"}}).ok());
  EXPECT_FALSE(parse_exec_result(json{{"timed_out", 1}, {"truncated", true}}).ok());
  auto r = parse_exec_result(json{{"timed_out", true}});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
}

TEST(ExecResult, ExitStatus) {
  ExecResult r;
  r.exit_code = 3;
  EXPECT_EQ(exit_status_of(r), 3);
  r.exit_code.reset();
  r.signal = 9;
  EXPECT_EQ(exit_status_of(r), 137);
  r.timed_out = true;
  EXPECT_EQ(exit_status_of(r), 124);
  EXPECT_FALSE(parse_exec_result(json::array()).ok());
  EXPECT_FALSE(parse_exec_result({{"exit_code", "0"}}).ok());
  EXPECT_FALSE(parse_exec_result(json::object()).ok());
  auto p = parse_exec_result({{"exit_code", nullptr}, {"signal", 15}, {"duration_ms", 4}});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->signal, 15);
  EXPECT_EQ(p->duration_ms, 4u);
}

TEST(ResolveSocket, FlagThenEnvironmentThenDefault) {
  setenv("CARAPACE_SOCKET", "/env.sock", 1);
  EXPECT_EQ(resolve_socket("/flag.sock"), "/flag.sock");
  EXPECT_EQ(resolve_socket(""), "/env.sock");
  unsetenv("CARAPACE_SOCKET");
  EXPECT_EQ(resolve_socket(""), kDefaultSocket);
}

// A fake daemon: enough of docs/api.md to check what the client sends and how it reads answers.
class DaemonClientTest : public testing::Test {
 protected:
  void SetUp() override {
    http::Router r;
    ASSERT_TRUE(
        r.add("POST", "/sandboxes", [this](const http::HttpRequest& req) {
           record(req);
           auto body =
               http::parse_json_object(req.body, {"template", "timeout_s", "env", "network"});
           if (!body.ok())
             return http::error_response(http::ErrorCode::kBadRequest, body.error().message);
           if ((*body)["template"] != "tpl-000000000001")
             return http::error_response(http::ErrorCode::kNotFound, "template tpl-x not found");
           return http::json_response(201, {{"id", "sb-000000000001"}});
         }).ok());
    ASSERT_TRUE(r.add("DELETE", "/sandboxes/{id}", [this](const http::HttpRequest& req) {
                   record(req);
                   return http::HttpResponse{204, {}, {}};
                 }).ok());
    ASSERT_TRUE(
        r.add("PUT", "/sandboxes/{id}/network", [this](const http::HttpRequest& req) {
           record(req);
           if (req.param("id") == "sb-paused")
             return http::error_response(http::ErrorCode::kConflict, "sandbox sb-paused is paused");
           auto body = http::parse_json_object(
               req.body, {"allow_hosts", "deny_hosts", "internet", "credentials", "upstreams"});
           if (!body.ok())
             return http::error_response(http::ErrorCode::kBadRequest, body.error().message);
           json net = *body;
           net["proxy"] = "http://127.0.0.1:3128";
           // As the daemon's view: each credential's secret redacted.
           if (net.contains("credentials"))
             for (json& c : net["credentials"])
               c["secret"] = "<redacted>";
           return http::json_response(200,
                                      {{"id", std::string(req.param("id"))}, {"network", net}});
         }).ok());
    ASSERT_TRUE(r.add("GET", "/boom", [](const http::HttpRequest&) {
                   return http::error_response(http::ErrorCode::kInternal, "something broke");
                 }).ok());
    ASSERT_TRUE(r.add("PUT", "/sandboxes/{id}/files", [this](const http::HttpRequest& req) {
                   record(req);
                   stored_ = req.body;
                   return http::json_response(
                       200, {{"path", std::string(req.query.get("path").value_or(""))},
                             {"size", req.body.size()}});
                 }).ok());
    ASSERT_TRUE(
        r.add("GET", "/sandboxes/{id}/files", [this](const http::HttpRequest& req) {
           record(req);
           return http::HttpResponse{200, {{"Content-Type", "application/octet-stream"}}, stored_};
         }).ok());
    ASSERT_TRUE(
        r.add("POST", "/sandboxes/{id}/documents", [this](const http::HttpRequest& req) {
           record(req);
           return http::HttpResponse{200, {{"Content-Type", "application/pdf"}}, "%PDF-1.4"};
         }).ok());
    ASSERT_TRUE(
        r.add_streaming(
             "POST", "/sandboxes/{id}/exec",
             [this](http::HttpRequest& req, http::ResponseWriter& w) {
               record(req);
               auto body = http::parse_json(req.body);
               if (!body.ok() || !(*body).value("stream", false)) {
                 (void)w.send(http::json_response(200, {{"exit_code", 2},
                                                        {"signal", nullptr},
                                                        {"stdout", "out"},
                                                        {"stderr", "err"},
                                                        {"timed_out", false},
                                                        {"truncated", false},
                                                        {"duration_ms", 5}}));
                 return;
               }
               http::SseStream sse(w);
               if (!sse.open().ok()) return;
               if ((*body)["argv"][0] == "missing") {  // fails after the 200
                 (void)sse.send(R"({"error":{"code":"bad_request","message":"no such program"}})",
                                "error");
                 (void)sse.close();
                 return;
               }
               (void)sse.send(json({{"data", agent::base64_encode("hel")}}).dump(), "stdout");
               (void)sse.send(json({{"data", agent::base64_encode("oops")}}).dump(), "stderr");
               (void)sse.send(json({{"data", agent::base64_encode("lo\n")}}).dump(), "stdout");
               (void)sse.send(json({{"exit_code", nullptr}, {"signal", 9}}).dump(), "exit");
               (void)sse.close();
             })
            .ok());
    ASSERT_TRUE(server_.start(std::move(r)));
  }

  void record(const http::HttpRequest& req) {
    std::lock_guard lock(mu_);
    targets_.push_back(req.method + " " + req.target);
    bodies_.push_back(req.body);
  }
  std::string last_target() {
    std::lock_guard lock(mu_);
    return targets_.empty() ? "" : targets_.back();
  }
  std::string last_body() {
    std::lock_guard lock(mu_);
    return bodies_.empty() ? "" : bodies_.back();
  }

  http::test::TestServer server_;
  std::mutex mu_;
  std::vector<std::string> targets_, bodies_;
  std::string stored_;
};

TEST_F(DaemonClientTest, CreateAndErrors) {
  DaemonClient c(server_.path);
  auto sb = c.post("/sandboxes", {{"template", "tpl-000000000001"}, {"env", {{"A", "1"}}}});
  ASSERT_TRUE(sb.ok()) << sb.error().describe();
  EXPECT_EQ((*sb)["id"], "sb-000000000001");
  // 4xx: the API's message, marked as the caller's fault.
  auto missing = c.post("/sandboxes", {{"template", "tpl-x"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "template tpl-x not found");
  EXPECT_EQ(missing.error().kind, ErrorKind::kInvalidInput);
  // 5xx and transport failures are the host's.
  auto boom = c.get("/boom");
  ASSERT_FALSE(boom.ok());
  EXPECT_EQ(boom.error().message, "something broke");
  EXPECT_EQ(boom.error().kind, ErrorKind::kHost);
  DaemonClient nowhere(server_.dir.file("absent.sock"));
  auto gone = nowhere.get("/health");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().kind, ErrorKind::kHost);
  EXPECT_NE(gone.error().message.find("absent.sock"), std::string::npos);
  // 204 is an empty (null) body.
  auto del = c.del(sandbox_target("sb-000000000001"));
  ASSERT_TRUE(del.ok());
  EXPECT_TRUE(del->is_null());
  EXPECT_EQ(last_target(), "DELETE /sandboxes/sb-000000000001");
}

TEST(NetworkJson, OnlyTheMembersGiven) {
  EXPECT_EQ(network_json({}), json::object());
  NetworkRequest n;
  n.deny_hosts = {"evil.org"};
  EXPECT_EQ(network_json(n), json({{"deny_hosts", {"evil.org"}}}));
  n.internet = true;
  EXPECT_EQ(network_json(n), json({{"deny_hosts", {"evil.org"}}, {"internet", true}}));
}

TEST(NetworkJson, CredentialsAndUpstreams) {
  NetworkRequest n;
  n.allow_hosts = {"api.example.com"};
  n.credentials.push_back({{"api.example.com", "*.example.org:443"},
                           "Authorization: Bearer {secret}",
                           "",
                           "s3cr3t",
                           "API_TOKEN"});
  n.credentials.push_back({{"maps.example.com"}, "", "key", "k3y", "MAPS_KEY"});
  n.upstreams.push_back({"api.carapace.internal", "https://api.example.com:8443"});
  EXPECT_FALSE(n.empty());
  EXPECT_EQ(
      network_json(n),
      json({{"allow_hosts", {"api.example.com"}},
            {"credentials",
             {{{"hosts", {"api.example.com", "*.example.org:443"}},
               {"header", "Authorization: Bearer {secret}"},
               {"secret", "s3cr3t"},
               {"env", "API_TOKEN"}},
              {{"hosts", {"maps.example.com"}},
               {"query", "key"},
               {"secret", "k3y"},
               {"env", "MAPS_KEY"}}}},
            {"upstreams",
             {{{"alias", "api.carapace.internal"}, {"origin", "https://api.example.com:8443"}}}}}));
  // Credentials alone make a request that is not empty (and has no internet by default).
  NetworkRequest only;
  only.upstreams = n.upstreams;
  EXPECT_FALSE(only.empty());
  EXPECT_FALSE(only.has_internet());
  EXPECT_TRUE(n.has_internet());
}

TEST_F(DaemonClientTest, SetNetworkPutsThePolicy) {
  DaemonClient c(server_.path);
  NetworkRequest n;
  n.allow_hosts = {"pypi.org:443", "*.pythonhosted.org"};
  n.deny_hosts = {"evil.pypi.org"};
  auto sb = c.set_network("sb-1", n);
  ASSERT_TRUE(sb.ok()) << sb.error().describe();
  EXPECT_EQ(last_target(), "PUT /sandboxes/sb-1/network");
  EXPECT_EQ(json::parse(last_body()), json({{"allow_hosts", {"pypi.org:443", "*.pythonhosted.org"}},
                                            {"deny_hosts", {"evil.pypi.org"}}}));
  EXPECT_EQ((*sb)["network"]["proxy"], "http://127.0.0.1:3128");
  NetworkRequest off;
  off.internet = false;
  sb = c.set_network("sb-1", off);
  ASSERT_TRUE(sb.ok()) << sb.error().describe();
  EXPECT_EQ(json::parse(last_body()), json({{"internet", false}}));
  // 409 for a paused sandbox: the API's message, the caller's fault.
  sb = c.set_network("sb-paused", n);
  ASSERT_FALSE(sb.ok());
  EXPECT_EQ(sb.error().message, "sandbox sb-paused is paused");
  EXPECT_EQ(sb.error().kind, ErrorKind::kInvalidInput);
}

// `carapace mcp --template T --allow-host ...`: the sandbox it makes on the first tool call
// carries the policy, and set_sandbox_network replaces it on that sandbox.
TEST_F(DaemonClientTest, McpSandboxIsCreatedWithItsNetwork) {
  NetworkRequest n;
  n.allow_hosts = {"pypi.org:443"};
  mcp::DaemonSandbox box(DaemonClient(server_.path), "tpl-000000000001", "", 60, n);
  NetworkRequest off;
  off.internet = false;
  auto view = box.set_network(off);
  ASSERT_TRUE(view.ok()) << view.error().describe();
  std::lock_guard lock(mu_);
  ASSERT_EQ(targets_.size(), 2u);
  EXPECT_EQ(targets_[0], "POST /sandboxes");
  EXPECT_EQ(json::parse(bodies_[0]), json({{"template", "tpl-000000000001"},
                                           {"timeout_s", 60},
                                           {"network", {{"allow_hosts", {"pypi.org:443"}}}}}));
  EXPECT_EQ(targets_[1], "PUT /sandboxes/sb-000000000001/network");
  EXPECT_EQ(json::parse(bodies_[1]), json({{"internet", false}}));
}

// `carapace mcp --credential ...`: the operator's credentials and upstreams go into the sandbox's
// create, and set_sandbox_network puts them back with the model's rules (a PUT without them would
// revoke them); with no way out they are left out, as the daemon refuses them there.
TEST_F(DaemonClientTest, McpSandboxKeepsTheOperatorsCredentials) {
  NetworkRequest n;
  n.allow_hosts = {"api.example.com:443"};
  n.credentials.push_back(
      {{"api.example.com"}, "Authorization: Bearer {secret}", "", "op-secret", "API_TOKEN"});
  n.upstreams.push_back({"api.carapace.internal", "https://api.example.com"});
  mcp::DaemonSandbox box(DaemonClient(server_.path), "tpl-000000000001", "", 0, n);
  NetworkRequest model;  // what the tool builds from the model's arguments
  model.allow_hosts = {"pypi.org:443", "api.example.com:443"};
  auto view = box.set_network(model);
  ASSERT_TRUE(view.ok()) << view.error().describe();
  EXPECT_EQ((*view)["network"]["credentials"][0]["secret"], "<redacted>");
  NetworkRequest off;
  off.internet = false;
  ASSERT_TRUE(box.set_network(off).ok());
  NetworkRequest rules_only;
  rules_only.allow_hosts = {"pypi.org:443"};
  rules_only.credentials.push_back({{"pypi.org"}, "", "k", "model-secret", "MODEL"});
  ASSERT_TRUE(box.set_network(rules_only).ok());
  std::lock_guard lock(mu_);
  ASSERT_EQ(targets_.size(), 4u);
  EXPECT_EQ(targets_[0], "POST /sandboxes");
  json create = json::parse(bodies_[0]);
  EXPECT_EQ(create["network"], network_json(n));
  EXPECT_EQ(create["network"]["credentials"][0]["secret"], "op-secret");
  EXPECT_EQ(targets_[1], "PUT /sandboxes/sb-000000000001/network");
  NetworkRequest expected = model;
  expected.credentials = n.credentials;
  expected.upstreams = n.upstreams;
  EXPECT_EQ(json::parse(bodies_[1]), network_json(expected));
  EXPECT_EQ(json::parse(bodies_[2]), json({{"internet", false}}));
  // Only the operator's credentials, never any other the request carried.
  expected = rules_only;
  expected.credentials = n.credentials;
  expected.upstreams = n.upstreams;
  EXPECT_EQ(json::parse(bodies_[3]), network_json(expected));
  EXPECT_EQ(bodies_[3].find("model-secret"), std::string::npos);
}

// --sandbox ID --network-tool --credential ...: nothing is created; the credentials ride only on
// the model's network changes.
TEST_F(DaemonClientTest, McpExistingSandboxGetsCredentialsOnlyWithNewRules) {
  NetworkRequest n;
  n.credentials.push_back({{"api.example.com"}, "", "key", "op-secret", "API_KEY"});
  mcp::DaemonSandbox box(DaemonClient(server_.path), "", "sb-7", 0, n);
  NetworkRequest model;
  model.allow_hosts = {"api.example.com"};
  ASSERT_TRUE(box.set_network(model).ok());
  std::lock_guard lock(mu_);
  ASSERT_EQ(targets_.size(), 1u);
  EXPECT_EQ(targets_[0], "PUT /sandboxes/sb-7/network");
  model.credentials = n.credentials;
  EXPECT_EQ(json::parse(bodies_[0]), network_json(model));
}

TEST_F(DaemonClientTest, FilesAreRawBytesWithEncodedPaths) {
  DaemonClient c(server_.path);
  std::string bytes("a\0b\xff", 4);
  auto put = c.put_file("sb-1", "dir/a b&c.bin", bytes);
  ASSERT_TRUE(put.ok()) << put.error().describe();
  EXPECT_EQ((*put)["path"], "dir/a b&c.bin");
  EXPECT_EQ(last_target(), "PUT /sandboxes/sb-1/files?path=dir%2Fa%20b%26c.bin");
  auto got = c.get_file("sb-1", "dir/a b&c.bin");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, bytes);
  auto doc = c.document("sb-1", {{"title", "x"}}, "pdf");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(*doc, "%PDF-1.4");
  EXPECT_EQ(json::parse(last_body()), json({{"spec", {{"title", "x"}}}, {"format", "pdf"}}));
}

TEST_F(DaemonClientTest, ExecBufferedAndStreamed) {
  DaemonClient c(server_.path);
  ExecRequest req;
  req.argv = {"sh", "-c", "x"};
  req.env = {{"K", "V"}};
  req.timeout_ms = 1000;
  auto r = c.exec("sb-1", req);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_EQ(r->stdout_data, "out");
  EXPECT_EQ(r->stderr_data, "err");
  json sent = json::parse(last_body());
  EXPECT_EQ(sent["argv"], json({"sh", "-c", "x"}));
  EXPECT_EQ(sent["env"]["K"], "V");
  EXPECT_EQ(sent["timeout_ms"], 1000);
  EXPECT_EQ(sent["stream"], false);

  std::string out, err;
  r = c.exec(
      "sb-1", req, [&](std::string_view b) { out.append(b); },
      [&](std::string_view b) { err.append(b); });
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(out, "hello\n");
  EXPECT_EQ(err, "oops");
  EXPECT_EQ(r->signal, 9);
  EXPECT_EQ(exit_status_of(*r), 137);
  EXPECT_EQ(json::parse(last_body())["stream"], true);

  // An `error` event after the stream started: the API's message, still a refused request.
  req.argv = {"missing"};
  r = c.exec(
      "sb-1", req, [&](std::string_view) {}, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "no such program");
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
}

}  // namespace
}  // namespace carapace::sandbox
