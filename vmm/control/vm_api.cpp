#include "vmm/control/vm_api.h"

#include "common/http/json_util.h"

namespace carapace {

using http::error_response;
using http::HttpRequest;
using http::HttpResponse;
using http::json_response;

namespace {

constexpr size_t kMaxDirLen = 4096;
constexpr uint64_t kMaxForkClones = 64;

HttpResponse conflict(VmControl::State s, const std::string& what) {
  return error_response(http::ErrorCode::kConflict,
                        what + ": the VM is " + vm_state_name(s) + "; nothing was changed");
}

// pause/resume take no fields: an empty body, or an empty JSON object.
Status check_empty_body(const HttpRequest& req) {
  if (req.body.empty()) return {};
  auto body = http::parse_json_object(req.body, {});
  if (!body.ok()) return body.take_error();
  return {};
}

// The snapshot directory is created by this process with its privileges: keep it to plain
// absolute paths, so a caller cannot smuggle a relative path (resolved against the VMM's cwd) or
// a ".." walk past a prefix it was allowed.
Status check_dir(const std::string& dir) {
  auto bad = [](const std::string& m) { return as_invalid_input(make_error("dir: " + m)); };
  if (dir.empty() || dir[0] != '/') return bad("must be an absolute path");
  if (dir.size() > kMaxDirLen) return bad("too long");
  if (dir.find('\0') != std::string::npos) return bad("holds a NUL byte");
  size_t start = 0;
  while (start <= dir.size()) {
    size_t end = dir.find('/', start);
    if (end == std::string::npos) end = dir.size();
    if (dir.compare(start, end - start, "..") == 0) return bad("must not contain '..'");
    start = end + 1;
  }
  return {};
}

}  // namespace

const char* vm_state_name(VmControl::State s) {
  switch (s) {
    case VmControl::State::kRunning:
      return "running";
    case VmControl::State::kPaused:
      return "paused";
    case VmControl::State::kEnded:
      return "ended";
  }
  return "unknown";
}

Result<std::unique_ptr<VmApi>> VmApi::start(const std::string& socket_path, VmControl& vm) {
  std::unique_ptr<VmApi> api(new VmApi(vm));
  http::HttpServerOptions options;
  options.unix_path = socket_path;
  // One client (the orchestrator) and a handful of calls: no need for 64 connection threads.
  options.max_connections = 8;
  options.limits.max_body_bytes = 64 * 1024;
  api->server_ = TRY(http::HttpServer::start(std::move(options), api->routes()));
  return api;
}

VmApi::~VmApi() {
  stop();
}

void VmApi::stop() {
  if (server_) server_->stop();
}

http::Router VmApi::routes() {
  http::Router r;
  // The patterns are literals: add() cannot fail on them.
  (void)r.add("GET", "/vm", [this](const HttpRequest&) { return get_vm(); });
  (void)r.add("PUT", "/vm/pause", [this](const HttpRequest& req) { return put_pause(req); });
  (void)r.add("PUT", "/vm/resume", [this](const HttpRequest& req) { return put_resume(req); });
  (void)r.add("PUT", "/snapshot/create",
              [this](const HttpRequest& req) { return put_snapshot(req); });
  (void)r.add("PUT", "/vm/fork", [this](const HttpRequest& req) { return put_fork(req); });
  return r;
}

HttpResponse VmApi::get_vm() {
  return json_response(200, {{"state", vm_state_name(vm_.state())},
                             {"vcpus", vm_.vcpus()},
                             {"mem_mib", vm_.mem_bytes() >> 20},
                             {"counters", vm_.counters()}});
}

HttpResponse VmApi::put_pause(const HttpRequest& req) {
  if (auto s = check_empty_body(req); !s.ok()) return error_response(s.error());
  std::lock_guard<std::mutex> lock(control_mu_);
  auto state = vm_.state();
  if (state != VmControl::State::kRunning) return conflict(state, "pause");
  if (auto s = vm_.pause(); !s.ok()) {
    // The VM ended between the check and the pause.
    if (vm_.state() == VmControl::State::kEnded) return conflict(VmControl::State::kEnded, "pause");
    return error_response(s.error());
  }
  return json_response(200, {{"state", vm_state_name(vm_.state())}});
}

HttpResponse VmApi::put_resume(const HttpRequest& req) {
  if (auto s = check_empty_body(req); !s.ok()) return error_response(s.error());
  std::lock_guard<std::mutex> lock(control_mu_);
  auto state = vm_.state();
  if (state != VmControl::State::kPaused) return conflict(state, "resume");
  if (auto s = vm_.resume(); !s.ok()) return error_response(s.error());
  return json_response(200, {{"state", vm_state_name(vm_.state())}});
}

HttpResponse VmApi::put_snapshot(const HttpRequest& req) {
  auto body = http::parse_json_object(req.body, {"dir", "resume"});
  if (!body.ok()) return error_response(body.error());
  const nlohmann::json& j = *body;
  if (!j.contains("dir") || !j["dir"].is_string())
    return error_response(http::ErrorCode::kBadRequest, "dir: a string is required");
  if (j.contains("resume") && !j["resume"].is_boolean())
    return error_response(http::ErrorCode::kBadRequest, "resume: must be true or false");
  std::string dir = j["dir"].get<std::string>();
  if (auto s = check_dir(dir); !s.ok()) return error_response(s.error());

  std::lock_guard<std::mutex> lock(control_mu_);
  auto state = vm_.state();
  if (state == VmControl::State::kEnded) return conflict(state, "snapshot");
  bool resume_after =
      j.contains("resume") ? j["resume"].get<bool>() : state == VmControl::State::kRunning;
  auto info = vm_.snapshot(dir, resume_after);
  if (!info.ok()) {
    if (vm_.state() == VmControl::State::kEnded)
      return conflict(VmControl::State::kEnded, "snapshot");
    return error_response(info.error());
  }
  nlohmann::json out = *info;
  out["state"] = vm_state_name(vm_.state());
  return json_response(200, out);
}

HttpResponse VmApi::put_fork(const HttpRequest& req) {
  auto body = http::parse_json_object(req.body, {"clones"});
  if (!body.ok()) return error_response(body.error());
  const nlohmann::json& j = *body;
  if (!j.contains("clones") || !j["clones"].is_number_unsigned() ||
      j["clones"].get<uint64_t>() == 0 || j["clones"].get<uint64_t>() > kMaxForkClones)
    return error_response(
        http::ErrorCode::kBadRequest,
        "clones: an integer from 1 to " + std::to_string(kMaxForkClones) + " is required");
  std::lock_guard<std::mutex> lock(control_mu_);
  auto state = vm_.state();
  if (state == VmControl::State::kEnded) return conflict(state, "fork");
  auto children = vm_.fork(static_cast<uint32_t>(j["clones"].get<uint64_t>()));
  if (!children.ok()) {
    if (vm_.state() == VmControl::State::kEnded) return conflict(VmControl::State::kEnded, "fork");
    return error_response(children.error());
  }
  nlohmann::json out = *children;
  out["state"] = vm_state_name(vm_.state());
  return json_response(200, out);
}

}  // namespace carapace
