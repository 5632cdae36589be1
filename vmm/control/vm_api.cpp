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

// The snapshot directory is created, and a share's folder opened, by this process with its
// privileges: keep them to plain absolute paths, so a caller cannot smuggle a relative path
// (resolved against the VMM's cwd) or a ".." walk past a prefix it was allowed.
Status check_dir(const std::string& dir, const std::string& field = "dir") {
  auto bad = [&field](const std::string& m) {
    return as_invalid_input(make_error(field + ": " + m));
  };
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
  (void)r.add("GET", "/fs", [this](const HttpRequest&) { return get_fs(); });
  (void)r.add("PUT", "/fs/{tag}", [this](const HttpRequest& req) { return put_fs(req); });
  return r;
}

namespace {

nlohmann::json share_json(const VmControl::FsShare& s, size_t index,
                          const std::map<std::string, uint64_t>& counters) {
  nlohmann::json c = nlohmann::json::object();
  const std::string prefix = "fs" + std::to_string(index) + "_";
  for (const char* name : {"requests", "errors", "bad_requests", "refused"})
    if (auto it = counters.find(prefix + name); it != counters.end()) c[name] = it->second;
  return nlohmann::json{
      {"tag", s.tag},
      {"path", s.path.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.path)},
      {"mode", s.path.empty() ? nlohmann::json(nullptr) : nlohmann::json(fs_mode_name(s.mode))},
      {"mounted", s.mounted},
      {"counters", std::move(c)}};
}

}  // namespace

HttpResponse VmApi::get_fs() {
  const auto shares = vm_.fs_shares();
  const auto counters = vm_.counters();
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < shares.size(); ++i)
    list.push_back(share_json(shares[i], i, counters));
  return json_response(200, {{"filesystems", std::move(list)}});
}

// docs/security.md #62: every refusal is one line and changes nothing.
HttpResponse VmApi::put_fs(const HttpRequest& req) {
  const std::string tag(req.param("tag"));
  auto body = http::parse_json_object(req.body, {"path", "mode"});
  if (!body.ok()) return error_response(body.error());
  const nlohmann::json& j = *body;
  if (!j.contains("path") || !j["path"].is_string())
    return error_response(http::ErrorCode::kBadRequest, "path: a string is required");
  const std::string path = j["path"].get<std::string>();
  if (auto s = check_dir(path, "path"); !s.ok()) return error_response(s.error());
  FsMode mode = FsMode::kReadOnly;
  if (j.contains("mode")) {
    auto parsed = j["mode"].is_string() ? parse_fs_mode(j["mode"].get<std::string>())
                                        : std::optional<FsMode>();
    if (!parsed)
      return error_response(http::ErrorCode::kBadRequest,
                            "mode: must be \"ro\", \"rw\" or \"rw-nodelete\"");
    mode = *parsed;
  }

  std::lock_guard<std::mutex> lock(control_mu_);
  auto state = vm_.state();
  if (state == VmControl::State::kEnded) return conflict(state, "bind");
  const auto shares = vm_.fs_shares();
  size_t index = shares.size();
  for (size_t i = 0; i < shares.size(); ++i)
    if (shares[i].tag == tag) index = i;
  // The tag is not repeated: it came in the URL and may hold anything but '/' and NUL.
  if (index == shares.size())
    return error_response(http::ErrorCode::kBadRequest, "no virtio-fs device has this tag");
  auto busy = [] {
    return error_response(http::ErrorCode::kConflict,
                          "bind: the guest has the share mounted; nothing was changed");
  };
  if (shares[index].mounted) return busy();
  if (auto s = vm_.bind_fs(tag, path, mode); !s.ok()) {
    if (s.error().sys_errno == EBUSY) return busy();
    return error_response(s.error());
  }
  const auto now = vm_.fs_shares();
  if (index >= now.size()) return error_response(http::ErrorCode::kInternal, "the share is gone");
  return json_response(200, share_json(now[index], index, vm_.counters()));
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
