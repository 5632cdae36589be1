// The daemon's REST API (docs/api.md) end to end over its Unix socket, against the fake back end
// whose instances run the real host agent.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "carapace/version.h"
#include "common/agent/base64.h"
#include "common/http/query.h"
#include "tests/service/daemon_harness.h"

namespace carapace::testing {
namespace {

using nlohmann::json;

TEST_F(DaemonTest, HealthSaysWhichIsolations) {
  start_daemon();
  auto r = call("GET", "/health");
  ASSERT_EQ(r.status, 200);
  json j = body_json(r);
  EXPECT_EQ(j["default_isolation"], "microvm");
  EXPECT_EQ(j["isolation"], json::array({"microvm", "process"}));
  EXPECT_EQ(j["sandboxes"], 0);
  EXPECT_EQ(j["version"], CARAPACE_VERSION);
}

TEST_F(DaemonTest, TemplatesCreateListGetDelete) {
  start_daemon();
  std::string id = make_template(1);
  ASSERT_EQ(id.rfind("tpl-", 0), 0u) << id;
  EXPECT_EQ(id.size(), 16u);
  auto list = body_json(call("GET", "/templates"));
  ASSERT_EQ(list["templates"].size(), 1u);
  EXPECT_EQ(list["templates"][0]["id"], id);
  auto one = call("GET", "/templates/" + id);
  ASSERT_EQ(one.status, 200);
  json t = body_json(one);
  EXPECT_EQ(t["pool"]["size"], 1);
  EXPECT_EQ(t["pool"]["ready"], 1);
  EXPECT_EQ(t["isolation"], "microvm");
  EXPECT_TRUE(path_exists(state_dir_ + "/templates/" + id + "/template.json"));
  EXPECT_EQ(call("DELETE", "/templates/" + id).status, 204);
  EXPECT_EQ(call("GET", "/templates/" + id).status, 404);
  EXPECT_EQ(call("DELETE", "/templates/" + id).status, 404);
  EXPECT_FALSE(path_exists(state_dir_ + "/templates/" + id));
}

TEST_F(DaemonTest, TemplateBadInputIs400NamingTheField) {
  start_daemon();
  struct Case {
    std::string body, field;
  } cases[] = {
      {R"({"kernel": "relative/vmlinux"})", "kernel"},
      {R"({"kernel": "/nonexistent/vmlinux"})", "kernel"},
      {R"({"isolation": "microvm"})", "kernel"},
      {R"({"isolation": "process"})", "rootfs"},
      {R"({"isolation": "vm"})", "isolation"},
      {R"({"kernel": "K", "vcpus": 0})", "vcpus"},
      {R"({"kernel": "K", "mem_mib": "big"})", "mem_mib"},
      {R"({"kernel": "K", "pool_size": 1000})", "pool_size"},
      {R"({"kernel": "K", "name": "a b"})", "name"},
      {R"({"kernel": "K", "name": 5})", "name"},
      {R"({"kernel": "K", "colour": "blue"})", "colour"},
  };
  for (auto& c : cases) {
    std::string body = c.body;
    size_t k = body.find("\"K\"");
    if (k != std::string::npos) body.replace(k, 3, "\"" + kernel_ + "\"");
    auto r = call("POST", "/templates", body);
    EXPECT_EQ(r.status, 400) << body << " -> " << r.body;
    EXPECT_NE(r.body.find(c.field), std::string::npos) << r.body;
  }
  EXPECT_EQ(body_json(call("GET", "/templates"))["templates"].size(), 0u);
  // Nothing was left in the state dir by the refused builds.
  EXPECT_EQ(::rmdir((state_dir_ + "/templates").c_str()), 0) << "template folders leaked";
}

TEST_F(DaemonTest, SandboxFromPoolThenRestoredWhenPoolIsEmpty) {
  start_daemon();
  std::string tpl = make_template(1);
  json a = make_sandbox(tpl);
  EXPECT_EQ(a["id"].get<std::string>().rfind("sb-", 0), 0u);
  EXPECT_EQ(a["from_pool"], true);
  EXPECT_EQ(a["state"], "running");
  EXPECT_EQ(a["template"], tpl);
  EXPECT_EQ(a["parent"], nullptr);
  EXPECT_EQ(a["timeout_s"], 300);
  json b = make_sandbox(tpl);
  EXPECT_EQ(b["from_pool"], false);
  json t = body_json(call("GET", "/templates/" + tpl));
  EXPECT_EQ(t["pool"]["hits"], 1);
  EXPECT_EQ(t["pool"]["misses"], 1);
  EXPECT_EQ(t["sandboxes"], 2);
  auto list = body_json(call("GET", "/sandboxes"));
  EXPECT_EQ(list["sandboxes"].size(), 2u);
  std::string id = a["id"];
  EXPECT_TRUE(path_exists(state_dir_ + "/sandboxes/" + id + ".json"));
  EXPECT_EQ(call("GET", "/sandboxes/" + id).status, 200);
  EXPECT_EQ(call("DELETE", "/sandboxes/" + id).status, 204);
  EXPECT_EQ(call("GET", "/sandboxes/" + id).status, 404);
  EXPECT_EQ(call("DELETE", "/sandboxes/" + id).status, 404);
  EXPECT_FALSE(path_exists(state_dir_ + "/sandboxes/" + id + ".json"));
  EXPECT_FALSE(process_alive(a["backend"]["pid"].get<int>()));
}

TEST_F(DaemonTest, SandboxBadInput) {
  start_daemon();
  std::string tpl = make_template(0);
  EXPECT_EQ(call("POST", "/sandboxes", R"({"template": "tpl-000000000000"})").status, 404);
  for (std::string body :
       {R"({})", R"({"template": 5})", R"({"template": "T", "timeout_s": 0})",
        R"({"template": "T", "timeout_s": 999999999})", R"({"template": "T", "env": {"A": 1}})",
        R"({"template": "T", "env": {"A=B": "x"}})",
        R"({"template": "T", "network": {"allow": ["10.0.0.0/8:tcp:443"]}})",
        R"({"template": "T", "network": {"allow_hosts": ["bad host!"]}})",
        R"({"template": "T", "network": {"allow_hosts": "pypi.org"}})",
        R"({"template": "T", "network": {"allow_hosts": ["pypi.org"], "internet": false}})",
        R"({"template": "T", "network": {"internet": "yes"}})",
        R"({"template": "T", "network": {"deny_hosts": [1]}})",
        R"({"template": "T", "network": true})", R"({"template": "T", "extra": 1})", R"([1, 2])",
        R"({"template": )"}) {
    size_t k = body.find("\"T\"");
    if (k != std::string::npos) body.replace(k, 3, "\"" + tpl + "\"");
    auto r = call("POST", "/sandboxes", body);
    EXPECT_EQ(r.status, 400) << body << " -> " << r.body;
    EXPECT_EQ(body_json(r)["error"]["code"], "bad_request");
  }
  EXPECT_EQ(body_json(call("GET", "/sandboxes"))["sandboxes"].size(), 0u);
}

// A back end that cannot carry egress refuses a policy (nothing is left running), shows "no
// internet" on every sandbox, and a template's policy is checked like a sandbox's.
TEST_F(DaemonTest, NetworkPolicyIsRefusedWhereTheBackEndHasNoEgress) {
  start_daemon();
  std::string tpl = make_template(0);
  auto r = call("POST", "/sandboxes",
                json{{"template", tpl}, {"network", {{"allow_hosts", {"pypi.org:443"}}}}}.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("egress is not supported"), std::string::npos) << r.body;
  EXPECT_EQ(body_json(call("GET", "/sandboxes"))["sandboxes"].size(), 0u);
  json sb = make_sandbox(tpl);
  EXPECT_EQ(sb["network"], (json{{"internet", false},
                                 {"allow_hosts", json::array()},
                                 {"deny_hosts", json::array()},
                                 {"credentials", json::array()},
                                 {"upstreams", json::array()},
                                 {"proxy", nullptr}}));
  r = call("PUT", "/sandboxes/" + sb["id"].get<std::string>() + "/network",
           R"({"allow_hosts": ["a.test"]})");
  EXPECT_EQ(r.status, 400) << r.body;
  r = call("PUT", "/sandboxes/" + sb["id"].get<std::string>() + "/network",
           R"({"allow_hosts": ["*.x", "bad host"]})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("network.allow_hosts[1]"), std::string::npos) << r.body;
  r = call("PUT", "/sandboxes/sb-000000000000/network", R"({"internet": false})");
  EXPECT_EQ(r.status, 404) << r.body;
  r = call("POST", "/templates",
           R"({"isolation": "microvm", "kernel": "/bin/true", "network": true})");
  EXPECT_EQ(r.status, 400) << r.body;
  r = call("POST", "/templates",
           R"({"isolation": "microvm", "kernel": "/bin/true", "network": {"allow_hosts": [5]}})");
  EXPECT_EQ(r.status, 400) << r.body;
}

TEST_F(DaemonTest, ExecReturnsOutputAndMergesEnv) {
  start_daemon();
  std::string tpl = make_template(1);
  json sb = make_sandbox(tpl, {{"env", {{"A", "sandbox"}, {"B", "sandbox"}}}});
  std::string id = sb["id"];
  json req = {{"argv", {"sh", "-c", "echo $A $B; echo err >&2; cat; exit 3"}},
              {"env", {{"B", "request"}}},
              {"stdin", "from stdin"}};
  auto r = call("POST", "/sandboxes/" + id + "/exec", req.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json j = body_json(r);
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_EQ(j["signal"], nullptr);
  EXPECT_EQ(j["stdout"], "sandbox request\nfrom stdin");
  EXPECT_EQ(j["stderr"], "err\n");
  EXPECT_EQ(j["timed_out"], false);
  // Invalid UTF-8 from the guest is replaced, not an error.
  r = call("POST", "/sandboxes/" + id + "/exec", R"({"argv": ["printf", "a\\377b"]})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body_json(r)["stdout"],
            "a\xEF\xBF\xBD"
            "b");
  // A program that does not exist: 400.
  r = call("POST", "/sandboxes/" + id + "/exec", R"({"argv": ["/no/such/program"]})");
  EXPECT_EQ(r.status, 400) << r.body;
  // Bad requests.
  for (const char* body :
       {R"({})", R"({"argv": []})", R"({"argv": "ls"})", R"({"argv": ["ls"], "timeout_ms": -1})",
        R"({"argv": ["ls"], "bogus": true})"}) {
    EXPECT_EQ(call("POST", "/sandboxes/" + id + "/exec", body).status, 400) << body;
  }
  EXPECT_EQ(call("POST", "/sandboxes/sb-000000000000/exec", R"({"argv": ["true"]})").status, 404);
}

TEST_F(DaemonTest, ExecStreamsServerSentEvents) {
  start_daemon();
  std::string tpl = make_template(1);
  std::string id = make_sandbox(tpl)["id"];
  std::string stream;
  std::vector<std::chrono::steady_clock::time_point> arrivals;
  json req = {{"argv", {"sh", "-c", "echo one; sleep 0.5; echo two >&2; exit 7"}},
              {"stream", true}};
  auto r = http::http_request_stream(socket_, "POST", "/sandboxes/" + id + "/exec", req.dump(),
                                     {{"Content-Type", "application/json"}},
                                     [&](std::string_view piece) {
                                       stream.append(piece);
                                       arrivals.push_back(std::chrono::steady_clock::now());
                                       return true;
                                     });
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->headers.get("Content-Type").value_or("").find("text/event-stream"),
            std::string::npos);
  std::string b64_one = agent::base64_encode("one\n");
  std::string b64_two = agent::base64_encode("two\n");
  size_t out = stream.find("event: stdout\ndata: {\"data\":\"" + b64_one + "\"}");
  size_t err = stream.find("event: stderr\ndata: {\"data\":\"" + b64_two + "\"}");
  size_t exit = stream.find("event: exit\ndata: ");
  ASSERT_NE(out, std::string::npos) << stream;
  ASSERT_NE(err, std::string::npos) << stream;
  ASSERT_NE(exit, std::string::npos) << stream;
  EXPECT_LT(out, err);
  EXPECT_LT(err, exit);
  EXPECT_NE(stream.find("\"exit_code\":7", exit), std::string::npos) << stream;
  // The first line arrived before the command ended: streamed, not buffered.
  ASSERT_GE(arrivals.size(), 2u);
  EXPECT_GE(arrivals.back() - arrivals.front(), std::chrono::milliseconds(300));

  // Accept: text/event-stream does the same without "stream".
  stream.clear();
  r = http::http_request_stream(
      socket_, "POST", "/sandboxes/" + id + "/exec", R"({"argv": ["echo", "hi"]})",
      {{"Content-Type", "application/json"}, {"Accept", "text/event-stream"}},
      [&](std::string_view piece) {
        stream.append(piece);
        return true;
      });
  ASSERT_TRUE(r.ok());
  EXPECT_NE(stream.find("event: exit"), std::string::npos) << stream;
}

TEST_F(DaemonTest, ExecClientDisconnectKillsTheCommand) {
  start_daemon();
  std::string tpl = make_template(1);
  std::string id = make_sandbox(tpl)["id"];
  // The agent runs on the host here, so the sleep carries a duration no other process on the
  // host uses: pgrep below must find only this command.
  const std::string secs = "29." + std::to_string(::getpid());
  json req = {{"argv", {"sh", "-c", "echo started; sleep " + secs + "; touch survived"}},
              {"stream", true}};
  auto r = http::http_request_stream(socket_, "POST", "/sandboxes/" + id + "/exec", req.dump(),
                                     {{"Content-Type", "application/json"}},
                                     [&](std::string_view) { return false; });  // hang up
  ASSERT_TRUE(r.ok()) << r.error().describe();
  // The agent killed the group: nothing in the sandbox is still sleeping.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string ps;
  while (std::chrono::steady_clock::now() < until) {
    // "[.]" keeps pgrep's own command line (and its sh's) from matching the pattern.
    json probe = {{"argv", {"sh", "-c", "pgrep -f 'sleep 29[.]" + secs.substr(3) + "' || true"}}};
    auto p = call("POST", "/sandboxes/" + id + "/exec", probe.dump());
    ps = body_json(p)["stdout"];
    if (ps.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(ps, "") << "the command outlived its client";
}

TEST_F(DaemonTest, FilesRoundTripBinaryAndList) {
  start_daemon();
  std::string tpl = make_template(1);
  std::string id = make_sandbox(tpl)["id"];
  std::string data(1536 * 1024 + 7, '\0');
  std::mt19937 rng(42);
  for (auto& c : data)
    c = static_cast<char>(rng());
  std::string target = "/sandboxes/" + id + "/files?path=" + http::percent_encode("out/blob.bin");
  auto put = call("PUT", target + "&parents=true&mode=0600", data,
                  {{"Content-Type", "application/octet-stream"}});
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(body_json(put)["size"], data.size());
  auto get = call("GET", target);
  ASSERT_EQ(get.status, 200) << get.body.substr(0, 200);
  EXPECT_EQ(get.headers.get("Content-Type").value_or(""), "application/octet-stream");
  EXPECT_TRUE(get.body == data) << "round trip changed the bytes";
  auto list = call("GET", "/sandboxes/" + id + "/files/list?path=out");
  ASSERT_EQ(list.status, 200) << list.body;
  json entries = body_json(list)["entries"];
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0]["name"], "blob.bin");
  EXPECT_EQ(entries[0]["size"], data.size());
  EXPECT_EQ(entries[0]["mode"], 0600);

  EXPECT_EQ(call("GET", "/sandboxes/" + id + "/files?path=missing").status, 404);
  EXPECT_EQ(call("GET", "/sandboxes/" + id + "/files").status, 400);
  EXPECT_EQ(call("GET", "/sandboxes/" + id + "/files?path=..%2F..%2Fetc%2Fpasswd").status, 400);
  EXPECT_EQ(call("PUT", "/sandboxes/" + id + "/files?path=x&mode=999", "x").status, 400);
  EXPECT_EQ(call("PUT", "/sandboxes/" + id + "/files?path=x&parents=maybe", "x").status, 400);
}

TEST_F(DaemonTest, PauseResumeForkTimeout) {
  start_daemon();
  std::string tpl = make_template(0);
  std::string id = make_sandbox(tpl)["id"];
  auto p = call("POST", "/sandboxes/" + id + "/pause");
  ASSERT_EQ(p.status, 200) << p.body;
  EXPECT_EQ(body_json(p)["state"], "paused");
  auto r = call("POST", "/sandboxes/" + id + "/resume", "{}");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body_json(r)["state"], "running");

  auto f = call("POST", "/sandboxes/" + id + "/fork", R"({"count": 2})");
  ASSERT_EQ(f.status, 201) << f.body;
  json children = body_json(f)["children"];
  ASSERT_EQ(children.size(), 2u);
  for (const auto& c : children) {
    EXPECT_EQ(c["parent"], id);
    EXPECT_NE(c["id"], id);
    auto e = call("POST", "/sandboxes/" + c["id"].get<std::string>() + "/exec",
                  R"({"argv": ["echo", "child"]})");
    EXPECT_EQ(body_json(e)["stdout"], "child\n");
  }
  EXPECT_EQ(body_json(call("GET", "/sandboxes"))["sandboxes"].size(), 3u);
  for (const char* body :
       {R"({"count": 0})", R"({"count": 17})", R"({"count": "2"})", R"({"n": 1})"}) {
    EXPECT_EQ(call("POST", "/sandboxes/" + id + "/fork", body).status, 400) << body;
  }
  // A process-isolation template cannot fork: 409 with the back end's reason.
  std::string ptpl = make_template(0, "process");
  std::string pid = make_sandbox(ptpl)["id"];
  auto pf = call("POST", "/sandboxes/" + pid + "/fork", R"({"count": 1})");
  EXPECT_EQ(pf.status, 409) << pf.body;
  EXPECT_NE(pf.body.find("cannot fork"), std::string::npos);

  auto t = call("POST", "/sandboxes/" + id + "/timeout", R"({"timeout_s": 1000})");
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(body_json(t)["timeout_s"], 1000);
  EXPECT_EQ(call("POST", "/sandboxes/" + id + "/timeout", R"({"timeout_s": 0})").status, 400);
  EXPECT_EQ(call("POST", "/sandboxes/" + id + "/timeout", R"({})").status, 400);
}

TEST_F(DaemonTest, SandboxExpiresAfterItsTimeToLive) {
  start_daemon();
  std::string tpl = make_template(0);
  json sb = make_sandbox(tpl, {{"timeout_s", 1}});
  std::string id = sb["id"];
  int pid = sb["backend"]["pid"];
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (call("GET", "/sandboxes/" + id).status == 200 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(call("GET", "/sandboxes/" + id).status, 404);
  EXPECT_FALSE(process_alive(pid));
  std::string metrics = call("GET", "/metrics").body;
  EXPECT_NE(metrics.find("carapace_sandboxes_expired_total 1\n"), std::string::npos) << metrics;
  // The registry lets go of the sandbox before its destruction is logged: the line follows.
  until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (read_text_file(dir_ + "/daemon.log").find("\"reason\":\"expired\"") == std::string::npos &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_NE(read_text_file(dir_ + "/daemon.log").find("\"reason\":\"expired\""), std::string::npos);
}

TEST_F(DaemonTest, LimitsOnSandboxesAndMemoryAre429) {
  start_daemon(R"({"max_sandboxes": 2, "max_memory_mib": 1024, "health_interval_s": 0})");
  std::string tpl = make_template(0);  // 128 MiB each
  make_sandbox(tpl);
  make_sandbox(tpl);
  auto r = call("POST", "/sandboxes", json{{"template", tpl}}.dump());
  EXPECT_EQ(r.status, 429) << r.body;
  EXPECT_EQ(body_json(r)["error"]["code"], "limit");
  EXPECT_EQ(body_json(call("GET", "/sandboxes"))["sandboxes"].size(), 2u);
  stop_daemon();

  start_daemon(R"({"max_memory_mib": 200, "health_interval_s": 0})");
  tpl = make_template(0);
  std::string id = make_sandbox(tpl)["id"];
  r = call("POST", "/sandboxes", json{{"template", tpl}}.dump());
  EXPECT_EQ(r.status, 429) << r.body;
  EXPECT_NE(r.body.find("max_memory_mib"), std::string::npos);
  // Forks count too.
  EXPECT_EQ(call("POST", "/sandboxes/" + id + "/fork", R"({"count": 1})").status, 429);
  EXPECT_EQ(call("DELETE", "/sandboxes/" + id).status, 204);
  make_sandbox(tpl);  // the memory came back
}

TEST_F(DaemonTest, FailedCreateLeavesNothingBehind) {
  start_daemon(R"({"max_sandboxes": 1, "health_interval_s": 0})");
  std::string bad = make_template(0, "microvm", R"("boot_args": "fake.fail_acquire")");
  auto r = call("POST", "/sandboxes", json{{"template", bad}}.dump());
  EXPECT_EQ(r.status, 500) << r.body;
  EXPECT_EQ(body_json(r)["error"]["code"], "internal");
  EXPECT_EQ(g_fake_instances.load(), 0);
  EXPECT_EQ(body_json(call("GET", "/sandboxes"))["sandboxes"].size(), 0u);
  EXPECT_EQ(body_json(call("GET", "/templates/" + bad))["sandboxes"], 0);
  EXPECT_EQ(::rmdir((state_dir_ + "/sandboxes").c_str()), 0) << "a sandbox record leaked";
  ::mkdir((state_dir_ + "/sandboxes").c_str(), 0700);
  EXPECT_NE(
      call("GET", "/metrics").body.find("carapace_sandboxes_failed_total{reason=\"create\"} 1\n"),
      std::string::npos);
  // The reservation came back: the one allowed sandbox can still be made.
  std::string good = make_template(0);
  make_sandbox(good);
  EXPECT_EQ(call("DELETE", "/templates/" + bad).status, 204);
}

TEST_F(DaemonTest, MetricsInPrometheusTextFormat) {
  start_daemon();
  std::string tpl = make_template(1);
  make_sandbox(tpl);
  make_sandbox(tpl);
  auto r = call("GET", "/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.headers.get("Content-Type").value_or("").find("text/plain"), std::string::npos);
  // Every line is a comment or `name{labels} value`.
  std::map<std::string, double> samples;
  std::istringstream in(r.body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) continue;
    size_t sp = line.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    std::string name = line.substr(0, sp);
    char* end = nullptr;
    double v = std::strtod(line.c_str() + sp + 1, &end);
    EXPECT_EQ(*end, '\0') << line;
    ASSERT_TRUE(name.find('{') == std::string::npos || name.back() == '}') << line;
    samples[name] = v;
  }
  EXPECT_EQ(samples["carapace_sandboxes"], 2);
  EXPECT_EQ(samples["carapace_templates"], 1);
  EXPECT_EQ(samples["carapace_pool_hits_total{template=\"" + tpl + "\"}"], 1);
  EXPECT_EQ(samples["carapace_pool_misses_total{template=\"" + tpl + "\"}"], 1);
  EXPECT_EQ(samples["carapace_pool_ready{template=\"" + tpl + "\"}"], 0);
  EXPECT_EQ(samples["carapace_sandboxes_created_total"], 2);
  EXPECT_EQ(samples["carapace_sandbox_create_seconds_count{source=\"pool\"}"], 1);
  EXPECT_EQ(samples["carapace_sandbox_create_seconds_count{source=\"restore\"}"], 1);
  EXPECT_EQ(samples["carapace_sandbox_create_seconds_bucket{source=\"restore\",le=\"+Inf\"}"], 1);
  EXPECT_EQ(samples["carapace_template_build_seconds_count"], 1);
  EXPECT_EQ(samples["carapace_egress_dropped_packets_total"], 2);  // the fake's 1 per instance
  EXPECT_GE(samples["carapace_http_requests_total{code=\"201\"}"], 3);
  size_t devices = 0;
  for (const auto& [k, v] : samples)
    devices += k.rfind("carapace_device_counter{sandbox=\"sb-", 0) == 0;
  EXPECT_EQ(devices, 4u);  // two counters for each of the two sandboxes
}

TEST_F(DaemonTest, JsonLogLinesForRequestsAndLifecycle) {
  start_daemon();
  std::string tpl = make_template(0);
  std::string id = make_sandbox(tpl)["id"];
  ASSERT_EQ(call("DELETE", "/sandboxes/" + id).status, 204);
  std::istringstream in(read_text_file(dir_ + "/daemon.log"));
  std::string line;
  bool request = false, created = false, destroyed = false, built = false;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not a JSON line: " << line;
    ASSERT_TRUE(j.contains("ts") && j.contains("level") && j.contains("msg")) << line;
    request |= j["msg"] == "request" && j["method"] == "POST" && j["status"] == 201 &&
               j.contains("ms") && j["path"] == "/sandboxes";
    created |= j["msg"] == "sandbox created" && j["id"] == id;
    destroyed |= j["msg"] == "sandbox destroyed" && j["id"] == id;
    built |= j["msg"] == "template built" && j["id"] == tpl;
  }
  EXPECT_TRUE(request && created && destroyed && built);
}

// docs/security.md #31: a guest whose agent falls silent is detected by the health checker, its
// sandbox destroyed and counted as failed{reason="unresponsive"}.
TEST_F(DaemonTest, SecurityChecks31HungAgentIsDestroyed) {
  start_daemon(R"({"health_interval_s": 0.2, "health_timeout_s": 0.5})");
  std::string tpl = make_template(0);
  json sb = make_sandbox(tpl);
  json healthy = make_sandbox(tpl);
  std::string id = sb["id"];
  int pid = sb["backend"]["pid"];
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);  // the agent stops answering; the daemon was not told
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (call("GET", "/sandboxes/" + id).status == 200 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(call("GET", "/sandboxes/" + id).status, 404);
  EXPECT_FALSE(process_alive(pid));
  EXPECT_NE(call("GET", "/metrics")
                .body.find("carapace_sandboxes_failed_total{reason=\"unresponsive\"} 1\n"),
            std::string::npos);
  // The healthy one and a paused one are left alone.
  std::string paused = make_sandbox(tpl)["id"];
  ASSERT_EQ(call("POST", "/sandboxes/" + paused + "/pause").status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(call("GET", "/sandboxes/" + healthy["id"].get<std::string>()).status, 200);
  EXPECT_EQ(call("GET", "/sandboxes/" + paused).status, 200);
  // A sandbox whose process died is noticed too (reason "exited").
  int hpid = healthy["backend"]["pid"];
  ::kill(hpid, SIGKILL);
  until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (call("GET", "/sandboxes/" + healthy["id"].get<std::string>()).status == 200 &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_NE(
      call("GET", "/metrics").body.find("carapace_sandboxes_failed_total{reason=\"exited\"} 1\n"),
      std::string::npos);
}

TEST_F(DaemonTest, ShutdownDestroysSandboxesAndTemplates) {
  start_daemon();
  std::string tpl = make_template(1);
  json sb = make_sandbox(tpl);
  stop_daemon();
  EXPECT_FALSE(process_alive(sb["backend"]["pid"].get<int>()));
  EXPECT_FALSE(path_exists(state_dir_ + "/sandboxes/" + sb["id"].get<std::string>() + ".json"));
  EXPECT_FALSE(path_exists(state_dir_ + "/templates/" + tpl));
  EXPECT_FALSE(path_exists(socket_));
}

TEST_F(DaemonTest, PersistKeepsTemplatesAcrossRestarts) {
  start_daemon(R"({"on_shutdown": "persist"})");
  std::string tpl = make_template(1);
  json sb = make_sandbox(tpl);
  stop_daemon();
  EXPECT_FALSE(process_alive(sb["backend"]["pid"].get<int>()));
  EXPECT_TRUE(path_exists(state_dir_ + "/templates/" + tpl + "/template.json"));
  start_daemon(R"({"on_shutdown": "destroy"})");
  auto t = call("GET", "/templates/" + tpl);
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(body_json(t)["pool"]["ready"], 1);
  EXPECT_EQ(make_sandbox(tpl)["from_pool"], true);
}

TEST_F(DaemonTest, TcpNeedsTheBearerToken) {
  std::string token_file = dir_ + "/token";
  std::ofstream(token_file) << "0123456789abcdef0123456789abcdef\n";
  start_daemon(R"({"tcp": {"port": 0, "token_file": ")" + token_file + R"("}})");
  uint16_t port = daemon_->tcp_port();
  ASSERT_NE(port, 0);
  auto client = http::HttpClient::connect_tcp(port);
  ASSERT_TRUE(client.ok());
  http::ClientRequest req;
  req.target = "/health";
  req.headers.set("Host", "127.0.0.1");
  auto r = client->request(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 401);
  expect_error_body(*r);
  auto c2 = http::HttpClient::connect_tcp(port);
  ASSERT_TRUE(c2.ok());
  req.headers.set("Authorization", "Bearer 0123456789abcdef0123456789abcdef");
  r = c2->request(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200) << r->body;
  // The Unix socket needs no token (its mode is the check).
  EXPECT_EQ(call("GET", "/health").status, 200);
}

// A field of the wrong JSON type is a 400 naming it, never a handler exception (which the server
// would answer with 500).
TEST_F(DaemonTest, DocumentFormatOfTheWrongTypeIs400) {
  start_daemon();
  auto r = call("POST", "/sandboxes/sb-000000000000/documents", R"({"spec": {}, "format": 7})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("format"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace carapace::testing
