#include "tests/service/daemon_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/http/error_code.h"
#include "daemon/core/json_log.h"
#include "daemon/core/state_store.h"
#include "jailer/jail_fs.h"

namespace carapace::testing {

using nlohmann::json;

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

bool process_alive(int pid) {
  // A zombie still answers kill(0): look at its state instead.
  std::string stat = read_text_file("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return false;
  size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

void DaemonTest::SetUp() {
  char tmpl[] = "/tmp/carapace-serve-test-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  dir_ = tmpl;
  socket_ = dir_ + "/api.sock";
  state_dir_ = dir_ + "/state";
  kernel_ = dir_ + "/vmlinux";
  std::ofstream(kernel_) << "not a kernel";
  // The daemon's JSON log goes to a file, so a failing test can show it.
  log_fd_ = ::open((dir_ + "/daemon.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  service::set_json_log_fd(log_fd_);
}

void DaemonTest::TearDown() {
  stop_daemon();
  service::set_json_log_fd(STDERR_FILENO);
  if (log_fd_ >= 0) ::close(log_fd_);
  if (HasFailure()) std::cerr << "daemon log:\n" << read_text_file(dir_ + "/daemon.log");
  EXPECT_EQ(g_fake_instances.load(), 0) << "fake instances leaked";
  EXPECT_EQ(g_agent_sanitizer_reports.exchange(0), 0) << "an agent reported a sanitizer error";
  (void)carapace::remove_tree(dir_);
}

void DaemonTest::start_daemon(const std::string& config_json) {
  stop_daemon();
  std::string text =
      config_json.empty() ? R"({"health_interval_s": 0.2, "health_timeout_s": 1})" : config_json;
  auto config = service::parse_daemon_config(text);
  ASSERT_TRUE(config.ok()) << config.error().describe();
  service::DaemonOptions o;
  o.socket_path = socket_;
  o.service.state_dir = state_dir_;
  o.service.config = *config;
  o.service.factories[service::Isolation::kMicrovm] = fake_backend_factory();
  FakeBackendOptions no_fork;
  no_fork.can_fork = false;
  o.service.factories[service::Isolation::kProcess] = fake_backend_factory(no_fork);
  o.service.default_isolation = service::Isolation::kMicrovm;
  o.service.kvm = true;
  auto d = service::Daemon::start(std::move(o));
  ASSERT_TRUE(d.ok()) << d.error().describe();
  daemon_ = std::move(*d);
}

void DaemonTest::stop_daemon() {
  if (daemon_) daemon_->stop();
  daemon_.reset();
}

http::HttpResponse DaemonTest::call(const std::string& method, const std::string& target,
                                    const std::string& body, const http::HttpHeaders& headers) {
  http::HttpHeaders h = headers;
  if (!body.empty() && !h.has("Content-Type")) h.set("Content-Type", "application/json");
  auto r = http::http_request(socket_, method, target, body, h);
  EXPECT_TRUE(r.ok()) << method << " " << target << ": " << r.error().describe();
  if (!r.ok()) return http::HttpResponse{0, {}, {}};
  if (r->status >= 400 && method != "HEAD") {
    SCOPED_TRACE(method + " " + target);
    expect_error_body(*r);
  }
  return std::move(*r);
}

void expect_error_body(const http::HttpResponse& r) {
  json j = json::parse(r.body, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.status << " without a JSON body: " << r.body;
  ASSERT_TRUE(j.contains("error") && j["error"].is_object()) << r.body;
  ASSERT_TRUE(j["error"].contains("code") && j["error"]["code"].is_string()) << r.body;
  EXPECT_TRUE(j["error"].contains("message") && j["error"]["message"].is_string()) << r.body;
  const std::string name = j["error"]["code"].get<std::string>();
  auto code = http::parse_error_code(name);
  ASSERT_TRUE(code.has_value()) << "'" << name << "' is not an API error code: " << r.body;
  EXPECT_EQ(http::http_status(*code), r.status) << "'" << name << "' sent with " << r.status;
}

json DaemonTest::body_json(const http::HttpResponse& r) {
  json j = json::parse(r.body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.body;
  return j;
}

std::string DaemonTest::make_template(uint32_t pool_size, const std::string& isolation,
                                      const std::string& extra_fields) {
  json body = {
      {"name", "test"}, {"isolation", isolation}, {"pool_size", pool_size}, {"mem_mib", 128}};
  if (isolation == "microvm") {
    body["kernel"] = kernel_;
  } else {
    body["rootfs"] = kernel_;  // any regular file: the fake never mounts it
  }
  std::string text = body.dump();
  if (!extra_fields.empty()) text = text.substr(0, text.size() - 1) + "," + extra_fields + "}";
  auto r = call("POST", "/templates", text);
  EXPECT_EQ(r.status, 201) << r.body;
  return body_json(r).value("id", "");
}

json DaemonTest::make_sandbox(const std::string& tpl, const json& extra) {
  json body = {{"template", tpl}};
  if (extra.is_object()) {
    for (const auto& [k, v] : extra.items())
      body[k] = v;
  }
  auto r = call("POST", "/sandboxes", body.dump());
  EXPECT_EQ(r.status, 201) << r.body;
  return body_json(r);
}

}  // namespace carapace::testing
