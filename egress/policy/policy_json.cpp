#include "egress/policy/policy_json.h"

#include <string>
#include <vector>

namespace carapace::egress {
namespace {

Error bad(const std::string& where, const std::string& what) {
  return as_invalid_input(make_error(where + "." + what));
}

Result<std::vector<std::string>> string_list(const nlohmann::json& j, const std::string& where,
                                             const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return out;
  if (!it->is_array()) return bad(where, std::string(key) + ": must be an array of strings");
  if (it->size() > kMaxPolicyRules)
    return bad(where,
               std::string(key) + ": at most " + std::to_string(kMaxPolicyRules) + " entries");
  for (const auto& e : *it) {
    if (!e.is_string()) return bad(where, std::string(key) + ": entries must be strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

}  // namespace

Result<EgressPolicy> policy_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) return as_invalid_input(make_error(where + ": must be an object"));
  for (const auto& [key, value] : j.items()) {
    (void)value;
    if (key != "allow_hosts" && key != "deny_hosts")
      return bad(where, key + ": unknown field (allow_hosts, deny_hosts)");
  }
  auto allow = TRY(string_list(j, where, "allow_hosts"));
  auto deny = TRY(string_list(j, where, "deny_hosts"));
  auto policy = EgressPolicy::parse(allow, deny);
  if (!policy.ok()) return as_invalid_input(make_error(where + "." + policy.error().message));
  return policy;
}

nlohmann::json policy_to_json(const EgressPolicy& policy) {
  return {{"allow_hosts", policy.allow_texts()}, {"deny_hosts", policy.deny_texts()}};
}

}  // namespace carapace::egress
