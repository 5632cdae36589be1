#include "clients/mcp/daemon_sandbox.h"

#include <cstdio>

namespace carapace::mcp {

using nlohmann::json;

DaemonSandbox::DaemonSandbox(sandbox::DaemonClient client, std::string template_id,
                             std::string sandbox_id, uint64_t timeout_s,
                             sandbox::NetworkRequest network)
    : client_(std::move(client)),
      template_id_(std::move(template_id)),
      sandbox_id_(std::move(sandbox_id)),
      timeout_s_(timeout_s),
      network_(std::move(network)) {}

DaemonSandbox::~DaemonSandbox() {
  if (Status s = close(); !s.ok())
    fprintf(stderr, "carapace mcp: %s\n", s.error().describe().c_str());
}

Result<std::string> DaemonSandbox::ensure() {
  if (!sandbox_id_.empty()) return sandbox_id_;
  json body = {{"template", template_id_}};
  if (timeout_s_ != 0) body["timeout_s"] = timeout_s_;
  if (!network_.empty()) body["network"] = sandbox::network_json(network_);
  json sb = TRY(client_.post("/sandboxes", body));
  auto id = sb.find("id");
  if (!sb.is_object() || id == sb.end() || !id->is_string())
    return make_error("daemon answered POST /sandboxes without an id");
  sandbox_id_ = id->get<std::string>();
  created_ = true;
  fprintf(stderr, "carapace mcp: created sandbox %s from %s\n", sandbox_id_.c_str(),
          template_id_.c_str());
  return sandbox_id_;
}

Status DaemonSandbox::close() {
  if (!created_) return ok_status();
  created_ = false;
  auto r = client_.del(sandbox::sandbox_target(sandbox_id_));
  if (!r.ok()) return r.take_error();
  fprintf(stderr, "carapace mcp: destroyed sandbox %s\n", sandbox_id_.c_str());
  return ok_status();
}

Result<sandbox::ExecResult> DaemonSandbox::run_command(const std::string& command,
                                                       const std::string& cwd,
                                                       uint64_t timeout_ms) {
  std::string id = TRY(ensure());
  sandbox::ExecRequest req;
  req.argv = {"sh", "-c", command};
  req.cwd = cwd;
  req.timeout_ms = timeout_ms;
  uint64_t wait_ms = (timeout_ms != 0 ? timeout_ms : 10 * 60 * 1000) + 30'000;
  client_.set_wait_timeout(std::chrono::milliseconds(wait_ms));
  return client_.exec(id, req);
}

Status DaemonSandbox::write_file(const std::string& path, const std::string& data) {
  std::string id = TRY(ensure());
  client_.set_wait_timeout(std::chrono::minutes(2));
  auto r = client_.put_file(id, path, data, /*parents=*/true);
  if (!r.ok()) return r.take_error();
  return ok_status();
}

Result<std::string> DaemonSandbox::read_file(const std::string& path) {
  std::string id = TRY(ensure());
  client_.set_wait_timeout(std::chrono::minutes(2));
  return client_.get_file(id, path);
}

Result<std::string> DaemonSandbox::generate_document(const json& spec, const std::string& format) {
  std::string id = TRY(ensure());
  client_.set_wait_timeout(std::chrono::minutes(5));
  return client_.document(id, spec, format);
}

Result<json> DaemonSandbox::set_network(const sandbox::NetworkRequest& network) {
  std::string id = TRY(ensure());
  client_.set_wait_timeout(std::chrono::minutes(1));
  // The PUT replaces credentials too (one left out is revoked): the operator's go with the new
  // rules. Not without a way out, which the daemon refuses with credentials.
  sandbox::NetworkRequest with_ours = network;
  with_ours.credentials.clear();
  with_ours.upstreams.clear();
  if (with_ours.has_internet()) {
    with_ours.credentials = network_.credentials;
    with_ours.upstreams = network_.upstreams;
  }
  return client_.set_network(id, with_ours);
}

}  // namespace carapace::mcp
