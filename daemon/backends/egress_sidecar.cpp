#include "daemon/backends/egress_sidecar.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include "common/http/http_client.h"
#include "egress/policy/policy_json.h"

namespace carapace::service {

using nlohmann::json;

namespace {

constexpr int kStopGraceMs = 1000;
constexpr uid_t kProxyUid = 65534;  // nobody: owns nothing; not dumpable, so no peer opens it

std::vector<std::string> proxy_argv(const EgressSidecarSpec& s) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(s.placement.listen_mode));
  std::vector<std::string> argv = {
      s.carapace_exe,  "egress-proxy", "--listen",  s.placement.listen_path,
      "--listen-mode", mode,           "--control", s.control_path,
      "--sandbox",     s.sandbox};
  // As root the daemon never leaves a proxy root: it runs on as nobody once bound.
  if (::geteuid() == 0) argv.insert(argv.end(), {"--run-as", std::to_string(kProxyUid)});
  if (!s.ca_file.empty()) argv.insert(argv.end(), {"--ca-file", s.ca_file});
  for (const std::string& r : s.policy.allow_texts())
    argv.insert(argv.end(), {"--allow-host", r});
  for (const std::string& r : s.policy.deny_texts())
    argv.insert(argv.end(), {"--deny-host", r});
  return argv;
}

}  // namespace

Result<std::unique_ptr<EgressSidecar>> EgressSidecar::start(EgressSidecarSpec spec) {
  if (spec.carapace_exe.empty() || spec.placement.listen_path.empty() || spec.control_path.empty())
    return make_error("egress proxy: no binary, listen path or control path");
  ::unlink(spec.control_path.c_str());  // a leftover of a sandbox of the same name
  auto process = TRY(VmmProcess::spawn(proxy_argv(spec), ""));
  std::unique_ptr<EgressSidecar> sidecar(new EgressSidecar(std::move(spec), std::move(process)));
  const auto deadline = std::chrono::steady_clock::now() + sidecar->spec_.ready_timeout;
  std::string last = "no answer";
  while (std::chrono::steady_clock::now() < deadline) {
    if (!sidecar->process_.alive())
      return make_error("egress proxy ended at start: " + sidecar->process_.describe_exit() +
                        " (its error is in the daemon's log)");
    auto r = sidecar->call("GET", "/stats", "");
    if (r.ok()) return sidecar;
    last = r.error().describe();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return make_error("egress proxy did not answer within " +
                    std::to_string(sidecar->spec_.ready_timeout.count()) + " ms: " + last);
}

Result<json> EgressSidecar::call(const std::string& method, const std::string& target,
                                 const std::string& body) {
  http::ClientOptions o;
  o.timeout = std::chrono::milliseconds(2000);
  o.max_body_bytes = 1 << 20;
  o.follow_socket_link = false;
  auto r = TRY(http::http_request(spec_.control_path, method, target, body, {}, o));
  json j = json::parse(r.body, nullptr, false);
  if (r.status / 100 != 2) {
    std::string why = j.is_object() && j.contains("error") && j["error"].is_string()
                          ? j["error"].get<std::string>()
                          : r.body.substr(0, 200);
    return make_error("egress proxy answered " + std::to_string(r.status) + ": " + why);
  }
  if (j.is_discarded()) return make_error("egress proxy: reply is not JSON");
  return j;
}

Status EgressSidecar::set_policy(const egress::EgressPolicy& policy) {
  TRY(call("PUT", "/policy", egress::policy_to_json(policy).dump()));
  std::lock_guard lock(mu_);
  spec_.policy = policy;
  return ok_status();
}

Status EgressSidecar::set_credentials(const egress::CredentialSet& credentials,
                                      const std::vector<egress::OriginAlias>& upstreams) {
  json list = json::array();
  for (const egress::Credential& c : credentials.entries()) {
    json entry = egress::credential_view_json(c.spec);
    entry["secret"] = std::string(c.spec.secret.reveal());
    entry["sentinel"] = c.sentinel;
    list.push_back(std::move(entry));
  }
  json body{{"credentials", std::move(list)},
            {"upstreams", egress::origin_aliases_to_json(upstreams)}};
  std::string text = body.dump();
  auto r = call("PUT", "/credentials", text);
  // The daemon's copies of the secrets are its NetworkSpec's; these are wiped rather than left
  // in freed heap.
  explicit_bzero(text.data(), text.size());
  for (auto& entry : body["credentials"]) {
    auto& secret = entry["secret"].get_ref<std::string&>();
    explicit_bzero(secret.data(), secret.size());
  }
  if (!r.ok()) return r.error();
  return ok_status();
}

Result<std::string> EgressSidecar::ca_pem() {
  if (!ca_pem_.empty()) return ca_pem_;
  json r = TRY(call("GET", "/ca", ""));
  auto pem = r.find("cert_pem");
  if (!r.is_object() || pem == r.end() || !pem->is_string() || pem->get<std::string>().empty())
    return make_error("egress proxy: GET /ca: no cert_pem");
  ca_pem_ = pem->get<std::string>();
  return ca_pem_;
}

egress::EgressPolicy EgressSidecar::policy() const {
  std::lock_guard lock(mu_);
  return spec_.policy;
}

std::map<std::string, uint64_t> EgressSidecar::counters() {
  std::map<std::string, uint64_t> out;
  auto r = call("GET", "/stats", "");
  if (!r.ok() || !r->is_object()) return out;
  auto get = [&](const json& j, const char* key) -> uint64_t {
    return j.contains(key) && j[key].is_number_unsigned() ? j[key].get<uint64_t>() : 0;
  };
  const json& s = *r;
  out["egress_connections"] = get(s, "connections");
  out["egress_allowed"] = get(s, "allowed");
  if (s.contains("denied") && s["denied"].is_object()) {
    out["egress_denied_rule"] = get(s["denied"], "rule");
    out["egress_denied_address"] = get(s["denied"], "address");
  }
  out["egress_denied_bad_request"] = get(s, "bad_requests");
  out["egress_denied_capacity"] = get(s, "over_capacity");
  out["egress_upstream_failures"] = get(s, "upstream_failures");
  out["egress_bytes_up"] = get(s, "bytes_up");
  out["egress_bytes_down"] = get(s, "bytes_down");
  out["egress_active"] = get(s, "active");
  out["egress_credential_injected"] = get(s, "credential_injected");
  out["egress_credential_refused"] = get(s, "credential_refused");
  return out;
}

void EgressSidecar::stop() {
  if (stopped_) return;
  stopped_ = true;
  process_.stop(kStopGraceMs);
  // A proxy that dropped root cannot remove its sockets from folders it does not own; a killed
  // one removes nothing. unlink() never follows a link that may have replaced the socket.
  ::unlink(spec_.control_path.c_str());
  struct stat st {};
  if (::lstat(spec_.placement.listen_path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
    ::unlink(spec_.placement.listen_path.c_str());
}

}  // namespace carapace::service
