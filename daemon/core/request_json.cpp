#include "daemon/core/request_json.h"

#include <initializer_list>

#include "daemon/core/mounts.h"
#include "egress/policy/policy_json.h"

namespace carapace::service {

using nlohmann::json;

namespace {

ApiStatus only_fields(const json& body, std::initializer_list<const char*> known) {
  for (const auto& [k, v] : body.items()) {
    bool found = false;
    for (const char* f : known)
      found = found || k == f;
    if (!found) return bad_request(k + ": unknown field");
  }
  return {};
}

// A path field: absent or null leaves `out` empty (the service decides whether it is required).
ApiStatus get_path(const json& body, const char* field, std::string* out) {
  if (!body.contains(field) || body[field].is_null()) return {};
  if (!body[field].is_string()) return bad_request(std::string(field) + ": must be a string");
  *out = body[field].get<std::string>();
  return {};
}

template <typename T>
ApiStatus get_in_range(const json& body, const char* field, FieldRange range, T* out) {
  if (!body.contains(field)) return {};
  *out = static_cast<T>(TRY(integer_in(body[field], field, range)));
  return {};
}

ApiResult<uint64_t> get_timeout(const json& v) {
  if (!v.is_number_integer() || v.get<int64_t>() < 1)
    return bad_request("timeout_s: must be a positive integer (seconds)");
  return v.get<uint64_t>();
}

}  // namespace

ApiResult<int64_t> integer_in(const json& v, const char* field, FieldRange range) {
  if (!v.is_number_integer() || !range.contains(v.get<int64_t>())) return range_error(field, range);
  return v.get<int64_t>();
}

ApiError range_error(const char* field, FieldRange r) {
  return bad_request(std::string(field) + ": must be an integer from " + std::to_string(r.lo) +
                     " to " + std::to_string(r.hi));
}

ApiResult<NetworkSpec> parse_network_spec(const json& v, const std::string& field) {
  if (!v.is_object())
    return bad_request(field +
                       ": must be an object {\"allow_hosts\": [...], \"deny_hosts\": [...]}");
  json rules = v;
  std::optional<bool> internet;
  if (v.contains("internet")) {
    if (!v["internet"].is_boolean()) return bad_request(field + ".internet: must be true or false");
    internet = v["internet"].get<bool>();
    rules.erase("internet");
  }
  if (v.contains("allow")) {
    return bad_request(field +
                       ".allow: replaced by allow_hosts (host names, *.suffix, or an address or "
                       "CIDR network, each with an optional :port)");
  }
  NetworkSpec n;
  if (v.contains("credentials")) {
    auto creds = egress::credentials_from_json(v["credentials"], field + ".credentials");
    if (!creds.ok()) return bad_request(creds.error().message);
    n.credentials = std::move(*creds);
    rules.erase("credentials");
  }
  if (v.contains("upstreams")) {
    auto ups = egress::origin_aliases_from_json(v["upstreams"], field + ".upstreams");
    if (!ups.ok()) return bad_request(ups.error().message);
    n.upstreams = std::move(*ups);
    rules.erase("upstreams");
  }
  auto policy = egress::policy_from_json(rules, field);
  if (!policy.ok()) return bad_request(policy.error().message);
  n.internet = internet.value_or(!policy->allow.empty());
  if (!n.internet && !policy->allow.empty())
    return bad_request(field + ": allow_hosts given with internet false");
  if (!n.internet && (!n.credentials.empty() || !n.upstreams.empty()))
    return bad_request(
        field + ": credentials and upstreams need internet (allow_hosts naming their hosts)");
  n.policy = std::move(*policy);
  return n;
}

json network_spec_json(const NetworkSpec& n, bool with_credentials) {
  json j = egress::policy_to_json(n.policy);
  j["internet"] = n.internet;
  if (with_credentials) {
    j["credentials"] = json::array();
    for (const egress::CredentialSpec& c : n.credentials)
      j["credentials"].push_back(egress::credential_view_json(c));
  }
  j["upstreams"] = egress::origin_aliases_to_json(n.upstreams);
  return j;
}

ApiResult<std::vector<MountRequest>> parse_mounts(const json& v, const std::string& field) {
  if (!v.is_array())
    return bad_request(field +
                       ": must be an array of {\"host_path\", \"guest_path\", \"mode\"} objects");
  if (v.size() > kMaxShares)
    return bad_request(field + ": at most " + std::to_string(kMaxShares) + " mounts");
  std::vector<MountRequest> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    const json& m = v[i];
    if (!m.is_object())
      return bad_request(f + ": must be an object {\"host_path\", \"guest_path\", \"mode\"}");
    for (const auto& [k, val] : m.items())
      if (k != "host_path" && k != "guest_path" && k != "mode")
        return bad_request(f + "." + k + ": unknown field");
    MountRequest r;
    for (auto [key, target] :
         {std::pair{"host_path", &r.host_path}, {"guest_path", &r.guest_path}}) {
      if (!m.contains(key) || !m[key].is_string())
        return bad_request(f + "." + key + ": required (an absolute path)");
      *target = m[key].get<std::string>();
    }
    if (m.contains("mode")) {
      auto mode =
          m["mode"].is_string() ? parse_share_mode(m["mode"].get<std::string>()) : std::nullopt;
      if (!mode) return bad_request(f + ".mode: must be \"ro\", \"rw\" or \"rw-nodelete\"");
      r.mode = *mode;
    }
    out.push_back(std::move(r));
  }
  TRY_STATUS(check_mount_requests(out, field));
  return out;
}

json mounts_json(const std::vector<MountRequest>& mounts) {
  json a = json::array();
  for (const MountRequest& m : mounts)
    a.push_back({{"host_path", m.host_path},
                 {"guest_path", m.guest_path},
                 {"mode", share_mode_name(m.mode)}});
  return a;
}

ApiResult<TemplateRequest> parse_template_request(const json& body) {
  TRY_STATUS(
      only_fields(body, {"name", "isolation", "kernel", "initrd", "rootfs", "boot_args", "vcpus",
                         "mem_mib", "pool_size", "agent_timeout_s", "network", "mounts"}));
  TemplateRequest req;
  if (body.contains("isolation")) {
    if (body["isolation"] == "microvm") {
      req.isolation = Isolation::kMicrovm;
    } else if (body["isolation"] == "process") {
      req.isolation = Isolation::kProcess;
    } else {
      return bad_request("isolation: must be \"microvm\" or \"process\"");
    }
  }
  TemplateSpec& spec = req.spec;
  TRY_STATUS(get_path(body, "kernel", &spec.kernel));
  TRY_STATUS(get_path(body, "initrd", &spec.initrd));
  TRY_STATUS(get_path(body, "rootfs", &spec.rootfs));
  if (body.contains("boot_args")) {
    if (!body["boot_args"].is_string() ||
        body["boot_args"].get<std::string>().size() > kMaxBootArgs)
      return bad_request("boot_args: must be a string of at most " + std::to_string(kMaxBootArgs) +
                         " characters");
    spec.boot_args = body["boot_args"].get<std::string>();
  }
  TRY_STATUS(get_in_range(body, "vcpus", kVcpusRange, &spec.vcpus));
  TRY_STATUS(get_in_range(body, "mem_mib", kMemMibRange, &spec.mem_mib));
  TRY_STATUS(get_in_range(body, "pool_size", kPoolSizeRange, &spec.pool_size));
  TRY_STATUS(get_in_range(body, "agent_timeout_s", kAgentTimeoutRange, &spec.agent_timeout_s));
  // A template's network is its sandboxes' default policy; false (or absent) is none.
  if (body.contains("network") && !body["network"].is_null() && body["network"] != false) {
    if (body["network"] == true)
      return bad_request(
          "network: give a policy object {\"allow_hosts\": [...]} (true allows nothing)");
    req.network = TRY(parse_network_spec(body["network"], "network"));
  }
  if (body.contains("name")) {
    if (!body["name"].is_string()) return bad_request("name: must be a string");
    req.name = body["name"].get<std::string>();
  }
  if (body.contains("mounts") && !body["mounts"].is_null())
    req.mounts = TRY(parse_mounts(body["mounts"], "mounts"));
  return req;
}

json template_request_json(const TemplateRequest& req) {
  const TemplateSpec& s = req.spec;
  json j = {{"vcpus", s.vcpus},
            {"mem_mib", s.mem_mib},
            {"pool_size", s.pool_size},
            {"agent_timeout_s", s.agent_timeout_s}};
  // A record: the secrets are not written, so a reloaded template has no credentials until its
  // owner gives them again (docs/api.md, Credentials).
  j["network"] = req.network.internet ? network_spec_json(req.network, false) : json(false);
  if (req.name) j["name"] = *req.name;
  if (req.isolation) j["isolation"] = isolation_name(*req.isolation);
  if (!req.mounts.empty()) j["mounts"] = mounts_json(req.mounts);
  auto set_if = [&j](const char* field, const std::string& value) {
    if (!value.empty()) j[field] = value;
  };
  set_if("kernel", s.kernel);
  set_if("initrd", s.initrd);
  set_if("rootfs", s.rootfs);
  set_if("boot_args", s.boot_args);
  return j;
}

ApiResult<SandboxRequest> parse_sandbox_request(const json& body) {
  TRY_STATUS(only_fields(body, {"template", "timeout_s", "env", "network", "mounts"}));
  SandboxRequest req;
  if (!body.contains("template") || !body["template"].is_string())
    return bad_request("template: required (a template id)");
  req.template_id = body["template"].get<std::string>();
  if (body.contains("timeout_s")) req.timeout_s = TRY(get_timeout(body["timeout_s"]));
  req.env = TRY(parse_env(body.value("env", json()), "env"));
  if (body.contains("network") && !body["network"].is_null())
    req.network = TRY(parse_network_spec(body["network"], "network"));
  if (body.contains("mounts") && !body["mounts"].is_null())
    req.mounts = TRY(parse_mounts(body["mounts"], "mounts"));
  return req;
}

ApiResult<ForkRequest> parse_fork_request(const json& body) {
  TRY_STATUS(only_fields(body, {"count", "network", "mounts", "mounts_mode"}));
  ForkRequest req;
  TRY_STATUS(get_in_range(body, "count", kForkCountRange, &req.count));
  if (body.contains("network") && !body["network"].is_null())
    req.network = TRY(parse_network_spec(body["network"], "network"));
  if (body.contains("mounts") && !body["mounts"].is_null()) {
    if (body["mounts"] == "inherit") {
      req.mounts = ForkRequest::Mounts::kInherit;
    } else if (body["mounts"].is_array()) {
      req.mounts = ForkRequest::Mounts::kList;
      req.mount_list = TRY(parse_mounts(body["mounts"], "mounts"));
    } else {
      return bad_request("mounts: must be \"inherit\" (the parent's) or a list of mounts");
    }
  }
  if (body.contains("mounts_mode")) {
    if (body["mounts_mode"] != "ro" && body["mounts_mode"] != "same")
      return bad_request("mounts_mode: must be \"ro\" (the default) or \"same\"");
    if (req.mounts != ForkRequest::Mounts::kInherit)
      return bad_request("mounts_mode: only with \"mounts\": \"inherit\"");
    req.keep_mount_modes = body["mounts_mode"] == "same";
  }
  return req;
}

ApiResult<TimeoutRequest> parse_timeout_request(const json& body) {
  TRY_STATUS(only_fields(body, {"timeout_s"}));
  if (!body.contains("timeout_s")) return bad_request("timeout_s: required");
  return TimeoutRequest{TRY(get_timeout(body["timeout_s"]))};
}

ApiResult<EnvList> parse_env(const json& v, const std::string& field) {
  EnvList env;
  if (v.is_null()) return env;
  if (!v.is_object()) return bad_request(field + ": must be an object of strings");
  if (v.size() > kMaxEnvVars)
    return bad_request(field + ": at most " + std::to_string(kMaxEnvVars) + " variables");
  for (const auto& [k, val] : v.items()) {
    if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos)
      return bad_request(field + ": '" + k + "' is not a variable name");
    if (!val.is_string()) return bad_request(field + "." + k + ": must be a string");
    std::string s = val.get<std::string>();
    if (s.find('\0') != std::string::npos) return bad_request(field + "." + k + ": holds NUL");
    env.emplace_back(k, s);
  }
  return env;
}

}  // namespace carapace::service
