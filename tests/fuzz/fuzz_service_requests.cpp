// Fuzzes the JSON request bodies and query strings of the daemon's routes (daemon, the
// api_*.cpp handlers and the SandboxService calls behind them) and the daemon's configuration
// parser. The service runs for real, in-process, over a fake back end whose instances are plain
// objects: no process is spawned, and an instance's agent socket does not exist, so the agent
// routes stop at the connect, after everything in the request has been parsed.
//
// Input: [route:1][query_len:1] + query string, then the body.
//   route % 11: 0 POST /templates, 1 POST /sandboxes, 2 POST /sandboxes/{id}/fork,
//   3 POST /sandboxes/{id}/timeout, 4 POST /sandboxes/{id}/exec, 5 PUT /sandboxes/{id}/files,
//   6 GET /sandboxes/{id}/files, 7 GET /sandboxes/{id}/files/list,
//   8 POST /sandboxes/{id}/documents, 9 POST /sandboxes/{id}/pause, 10 parse_daemon_config.
//   {id} is a live sandbox; "@TPL" in a body is replaced by a live template's id (ids are random,
//   so no seed could name one). "/proc/self/exe" is a regular file on every Linux host, for the
//   templates' file fields.
// Handlers must answer every request with a status, and never throw: malformed input is a 4xx
// value, not an exception. After each input everything it created is destroyed and the live
// sandbox's state is put back, so inputs do not depend on one another.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/http/response_writer.h"
#include "common/http/router.h"
#include "daemon/api/api_common.h"
#include "daemon/core/daemon_config.h"
#include "daemon/core/json_log.h"
#include "daemon/core/sandbox_service.h"
#include "jailer/jail_fs.h"
#include "tests/fuzz/fuzz_memory.h"

using namespace carapace;
using namespace carapace::service;
using carapace::fuzz::Input;
using nlohmann::json;

namespace {

class FakeInstance : public Instance {
 public:
  explicit FakeInstance(std::string dir) {
    endpoint_.kind = AgentEndpoint::Kind::kUnix;
    endpoint_.path = dir + "/no-agent.sock";  // never created: connects fail at once
    endpoint_.token = "00112233445566778899aabbccddeeff";
  }
  const AgentEndpoint& agent() const override { return endpoint_; }
  Status pause() override {
    if (paused_) return as_invalid_input(make_error("already paused"));
    paused_ = true;
    return {};
  }
  Status resume() override {
    if (!paused_) return as_invalid_input(make_error("not paused"));
    paused_ = false;
    return {};
  }
  bool paused() const override { return paused_; }
  bool alive() override { return true; }
  std::string exit_description() override { return {}; }
  int pid() const override { return -1; }
  json describe() const override { return {{"fake", true}, {"files", json::array()}}; }
  std::map<std::string, uint64_t> counters() override { return {}; }

 private:
  AgentEndpoint endpoint_;
  bool paused_ = false;
};

class FakeBackend : public TemplateBackend {
 public:
  explicit FakeBackend(std::string dir) : dir_(std::move(dir)) {}
  Result<std::unique_ptr<Instance>> acquire(const InstanceOptions&, bool* from_pool) override {
    *from_pool = false;
    return std::unique_ptr<Instance>(new FakeInstance(dir_));
  }
  Result<std::vector<std::unique_ptr<Instance>>> fork(Instance&, uint32_t count,
                                                      const InstanceOptions&) override {
    std::vector<std::unique_ptr<Instance>> out;
    for (uint32_t i = 0; i < count; ++i)
      out.push_back(std::make_unique<FakeInstance>(dir_));
    return out;
  }
  PoolStats pool_stats() override { return {}; }
  json describe() const override { return json::object(); }
  void shutdown() override {}

 private:
  std::string dir_;
};

Result<std::unique_ptr<TemplateBackend>> fake_factory(const TemplateSpec&,
                                                      const BackendContext& ctx) {
  return std::unique_ptr<TemplateBackend>(new FakeBackend(ctx.dir));
}

struct Fixture {
  std::string state_dir;
  std::unique_ptr<SandboxService> svc;
  http::Router router;
  std::string tpl;            // the live template
  std::string sb;             // the live sandbox
  TimeoutRequest sb_timeout;  // puts its time to live back
};

std::string make_state_dir() {
  // tmpfs when there is one: the service syncs its records, which a disk makes slow.
  for (const char* base : {"/dev/shm", "/tmp"}) {
    std::string tmpl = std::string(base) + "/carapace-fuzz-svc-XXXXXX";
    if (::mkdtemp(tmpl.data())) return tmpl;
  }
  __builtin_trap();
}

Fixture& fixture() {
  static Fixture* f = [] {
    set_log_level(LogLevel::kError);
    set_json_log_fd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    auto* fx = new Fixture();
    fx->state_dir = make_state_dir();
    std::atexit([] { (void)remove_tree(fixture().state_dir); });
    ServiceOptions o;
    o.state_dir = fx->state_dir;
    o.config.health_interval_s = 0;  // no health thread work: instances are always alive
    o.factories[Isolation::kMicrovm] = fake_factory;
    o.factories[Isolation::kProcess] = fake_factory;
    o.default_isolation = Isolation::kProcess;
    auto svc = SandboxService::start(std::move(o));
    if (!svc.ok()) __builtin_trap();
    fx->svc = std::move(*svc);
    if (!add_all_routes(fx->router, *fx->svc).ok()) __builtin_trap();
    TemplateRequest tpl_request;
    tpl_request.spec.rootfs = "/proc/self/exe";
    tpl_request.spec.pool_size = 0;
    auto tpl = fx->svc->create_template(tpl_request);
    if (!tpl.ok()) __builtin_trap();
    fx->tpl = tpl->id;
    fx->sb_timeout.timeout_s = fx->svc->config().max_ttl_s;
    SandboxRequest sb_request;
    sb_request.template_id = fx->tpl;
    auto sb = fx->svc->create_sandbox(sb_request);
    if (!sb.ok()) __builtin_trap();
    fx->sb = sb->id;
    return fx;
  }();
  return *f;
}

// Destroys what the input created and undoes what it changed on the live sandbox.
void reset(Fixture& fx) {
  for (const SandboxView& s : fx.svc->list_sandboxes()) {
    if (s.id != fx.sb) (void)fx.svc->delete_sandbox(s.id);
  }
  for (const TemplateView& t : fx.svc->list_templates()) {
    if (t.id != fx.tpl) (void)fx.svc->delete_template(t.id);
  }
  (void)fx.svc->resume_sandbox(fx.sb);
  if (!fx.svc->set_timeout(fx.sb, fx.sb_timeout).ok()) __builtin_trap();
}

std::string replace_all(std::string s, std::string_view from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

void drain(int fd) {
  char buf[4096];
  while (::recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
}

void serve_one(Fixture& fx, std::string_view method, const std::string& path,
               std::string_view query, std::string body) {
  http::HttpRequest req;
  req.method = std::string(method);
  req.path = path;
  req.target = path + "?" + std::string(query);
  req.query_string = std::string(query);
  req.body = replace_all(std::move(body), "@TPL", fx.tpl);
  auto q = http::QueryParams::parse(query);
  if (!q.ok()) return;  // the server answers 400 before any handler
  req.query = std::move(*q);
  http::Router::Match m = fx.router.find(method, path);
  if (m.kind != http::Router::Match::kFound) __builtin_trap();
  req.path_params = std::move(m.params);

  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) __builtin_trap();
  UniqueFd ours(sv[0]), theirs(sv[1]);
  http::ResponseWriter::Config wc;
  wc.fd = theirs.get();
  http::ResponseWriter w(wc);
  try {
    m.route->handler(req, w);
  } catch (const std::exception&) {
    __builtin_trap();  // the server would answer 500 "internal error" to bad input
  }
  if (!w.started() || w.status() < 200 || w.status() > 599) __builtin_trap();
  drain(ours.get());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Fixture& fx = fixture();
  Input in(data, size);
  const uint8_t route = in.take<uint8_t>() % 11;
  const size_t qlen = std::min<size_t>(in.take<uint8_t>(), in.size());
  const std::string_view query(reinterpret_cast<const char*>(in.data()), qlen);
  const std::string body(reinterpret_cast<const char*>(in.data()) + qlen, in.size() - qlen);
  const std::string sb = "/sandboxes/" + fx.sb;
  switch (route) {
    case 0:
      serve_one(fx, "POST", "/templates", query, body);
      break;
    case 1:
      serve_one(fx, "POST", "/sandboxes", query, body);
      break;
    case 2:
      serve_one(fx, "POST", sb + "/fork", query, body);
      break;
    case 3:
      serve_one(fx, "POST", sb + "/timeout", query, body);
      break;
    case 4:
      serve_one(fx, "POST", sb + "/exec", query, body);
      break;
    case 5:
      serve_one(fx, "PUT", sb + "/files", query, body);
      break;
    case 6:
      serve_one(fx, "GET", sb + "/files", query, body);
      break;
    case 7:
      serve_one(fx, "GET", sb + "/files/list", query, body);
      break;
    case 8:
      serve_one(fx, "POST", sb + "/documents", query, body);
      break;
    case 9:
      serve_one(fx, "POST", sb + "/pause", query, body);
      break;
    default:
      (void)parse_daemon_config(body);
      break;
  }
  reset(fx);
  return 0;
}
