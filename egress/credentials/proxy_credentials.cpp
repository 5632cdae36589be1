#include "egress/credentials/proxy_credentials.h"

#include <set>

#include "common/base/flag_values.h"
#include "egress/policy/egress_policy.h"
#include "egress/policy/host_name.h"
#include "egress/policy/quote.h"

namespace carapace::egress {
namespace {

Error invalid(std::string what) {
  return as_invalid_input(make_error(std::move(what)));
}

Result<std::string> string_field(const nlohmann::json& j, const char* key,
                                 const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string())
    return invalid(where + "." + key + " is required and must be a string");
  return it->get<std::string>();
}

// "https://host" or "https://host:port", host a name.
Result<OriginAlias> parse_origin(std::string_view text, const std::string& where) {
  constexpr std::string_view kScheme = "https://";
  if (text.size() <= kScheme.size() || text.substr(0, kScheme.size()) != kScheme)
    return invalid(where + " must be https://host[:port]");
  std::string_view authority = text.substr(kScheme.size());
  if (authority.find_first_of("/?#@[]") != std::string_view::npos)
    return invalid(where + " must be https://host[:port]: no path, user information or IPv6");
  OriginAlias out;
  const size_t colon = authority.find(':');
  if (colon != std::string_view::npos) {
    const std::string_view port_text = authority.substr(colon + 1);
    auto port = decimal_u64(port_text);
    if (!port || *port == 0 || *port > 65535 || port_text.size() > 5 || port_text[0] == '0')
      return invalid(where + ": the port must be 1-65535");
    out.port = static_cast<uint16_t>(*port);
    authority = authority.substr(0, colon);
  }
  auto dest = parse_destination(authority, out.port);
  if (!dest.ok()) return invalid(where + ": " + dest.error().message);
  if (dest->literal) return invalid(where + ": the origin must be a host name, not an address");
  out.host = dest->host;
  return out;
}

}  // namespace

std::string OriginAlias::origin_text() const {
  return "https://" + host + (port == 443 ? "" : ":" + std::to_string(port));
}

Result<OriginAlias> origin_alias_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) return invalid(where + " must be an object");
  for (const auto& [key, value] : j.items()) {
    if (key != "alias" && key != "origin")
      return invalid(where + ": unknown field " + egress::quoted(key));
  }
  const std::string alias_text = TRY(string_field(j, "alias", where));
  const std::string origin_text = TRY(string_field(j, "origin", where));
  auto alias = normalize_host_name(alias_text);
  if (!alias.ok()) return invalid(where + ".alias: " + alias.error().message);
  OriginAlias out = TRY(parse_origin(origin_text, where + ".origin"));
  out.alias = std::move(*alias);
  if (out.alias == out.host) return invalid(where + ": the alias is the origin's own name");
  return out;
}

Result<std::vector<OriginAlias>> origin_aliases_from_json(const nlohmann::json& j,
                                                          const std::string& where) {
  std::vector<OriginAlias> out;
  if (j.is_null()) return out;
  if (!j.is_array()) return invalid(where + " must be an array");
  if (j.size() > kMaxOrigins)
    return invalid(where + ": at most " + std::to_string(kMaxOrigins) + " entries");
  std::set<std::string> seen;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    OriginAlias o = TRY(origin_alias_from_json(j[i], at));
    if (!seen.insert(o.alias).second)
      return invalid(at + ": alias " + egress::quoted(o.alias) + " is given twice");
    out.push_back(std::move(o));
  }
  return out;
}

nlohmann::json origin_aliases_to_json(const std::vector<OriginAlias>& origins) {
  nlohmann::json out = nlohmann::json::array();
  for (const OriginAlias& o : origins)
    out.push_back({{"alias", o.alias}, {"origin", o.origin_text()}});
  return out;
}

const OriginAlias* ProxyCredentials::find_origin(std::string_view host) const {
  for (const OriginAlias& o : origins) {
    if (o.alias == host) return &o;
  }
  return nullptr;
}

}  // namespace carapace::egress
