#include "egress/credentials/credential_spec.h"

#include <array>
#include <set>

#include "egress/credentials/ascii_text.h"
#include "egress/policy/quote.h"

namespace carapace::egress {
namespace {

constexpr std::string_view kPlaceholder = "{secret}";
constexpr size_t kMaxQueryNameBytes = 128;

Error invalid(std::string what) {
  return as_invalid_input(make_error(std::move(what)));
}

// Fields a secret must not go into: the proxy sets Host and the framing itself, and drops the
// hop-by-hop fields (RFC 9110 §7.6.1) before the request goes on, so a credential there would
// either fight the proxy or never arrive.
bool is_reserved_header(std::string_view name) {
  static constexpr std::array<std::string_view, 10> kReserved = {
      "host",       "content-length",   "transfer-encoding",   "connection",
      "keep-alive", "proxy-connection", "proxy-authorization", "te",
      "trailer",    "upgrade"};
  const std::string lower = ascii::lower(name);
  for (std::string_view r : kReserved) {
    if (lower == r) return true;
  }
  return false;
}

Result<std::string> string_field(const nlohmann::json& j, const std::string& where,
                                 const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return invalid(where + "." + key + ": is required");
  if (!it->is_string()) return invalid(where + "." + key + ": must be a string");
  return it->get<std::string>();
}

// Prefixes an error from one of the checks with the field it is about.
Error at(const std::string& where, const char* key, const Error& e) {
  return invalid(where + "." + key + ": " + e.message);
}

}  // namespace

std::string CredentialSlot::describe() const {
  return (kind == Kind::kHeader ? "header " : "query parameter ") + egress::quoted(name);
}

std::string CredentialSlot::template_text() const {
  if (kind == Kind::kQuery) return name;
  return name + ": " + prefix + std::string(kPlaceholder) + suffix;
}

std::string CredentialSpec::describe() const {
  std::string out = env + ": " + slot.describe() + " for ";
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (i > 0) out += ", ";
    out += hosts[i].text;
  }
  return out;
}

Result<CredentialSlot> parse_header_slot(std::string_view header) {
  // The template is operator text that may hold part of a credential (a Basic scheme's user),
  // so no message below repeats its value.
  for (char c : header) {
    if (!ascii::is_printable(c) && c != '\t')
      return invalid("must be printable ASCII: no CR, LF, NUL or other control bytes");
  }
  const size_t colon = header.find(':');
  if (colon == std::string_view::npos)
    return invalid("must be 'Name: value template' with {secret} in the value");
  const std::string_view name = header.substr(0, colon);
  if (name.empty()) return invalid("the header name is empty");
  for (char c : name) {
    if (!ascii::is_tchar(c)) return invalid("the header name is not an HTTP token");
  }
  if (is_reserved_header(name))
    return invalid("the header " + egress::quoted(name) + " is set or dropped by the proxy itself");
  const std::string_view value = ascii::trim_ows(header.substr(colon + 1));
  const size_t at = value.find(kPlaceholder);
  if (at == std::string_view::npos) return invalid("the value template has no {secret}");
  if (value.find(kPlaceholder, at + 1) != std::string_view::npos)
    return invalid("the value template has {secret} more than once");
  CredentialSlot slot;
  slot.kind = CredentialSlot::Kind::kHeader;
  slot.name = std::string(name);
  slot.prefix = std::string(value.substr(0, at));
  slot.suffix = std::string(value.substr(at + kPlaceholder.size()));
  return slot;
}

Result<CredentialSlot> parse_query_slot(std::string_view name) {
  if (name.empty() || name.size() > kMaxQueryNameBytes)
    return invalid("the parameter name must be 1 to " + std::to_string(kMaxQueryNameBytes) +
                   " bytes");
  for (char c : name) {
    if (!ascii::is_unreserved(c))
      return invalid("the parameter name " + egress::quoted(name) +
                     " may only hold letters, digits and - . _ ~");
  }
  CredentialSlot slot;
  slot.kind = CredentialSlot::Kind::kQuery;
  slot.name = std::string(name);
  return slot;
}

Status check_secret(std::string_view secret) {
  // Only sizes and classes of bytes: never a byte of the secret itself.
  if (secret.empty() || secret.size() > kMaxSecretBytes)
    return invalid("must be 1 to " + std::to_string(kMaxSecretBytes) + " bytes, not " +
                   std::to_string(secret.size()));
  for (char c : secret) {
    if (!ascii::is_printable(c))
      return invalid("must be printable ASCII: no CR, LF, NUL or other control bytes");
  }
  if (secret.front() == ' ' || secret.back() == ' ')
    return invalid("must not begin or end with a space");
  if (secret == kRedacted)
    return invalid("is the redacted placeholder of a credential's view, not a secret");
  return ok_status();
}

Status check_env_name(std::string_view env) {
  if (env.empty() || env.size() > kMaxEnvNameBytes)
    return invalid("must be 1 to " + std::to_string(kMaxEnvNameBytes) + " bytes");
  const bool starts_with_digit = env[0] >= '0' && env[0] <= '9';
  bool word = !starts_with_digit;
  for (char c : env)
    word = word &&
           ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
  if (!word) return invalid(egress::quoted(env) + " is not an environment variable name");
  // The trust variables too (the proxy's CA, given with credentials: egress/README.md, TLS
  // termination).
  static constexpr std::array<std::string_view, 14> kAgentSets = {
      "path",           "home",
      "lang",           "term",
      "http_proxy",     "https_proxy",
      "all_proxy",      "no_proxy",
      "ssl_cert_file",  "requests_ca_bundle",
      "curl_ca_bundle", "pip_cert",
      "git_ssl_cainfo", "node_extra_ca_certs"};
  const std::string lower = ascii::lower(env);
  for (std::string_view r : kAgentSets) {
    if (lower == r)
      return invalid(egress::quoted(env) +
                     " is set by the sandbox's agent and cannot carry a credential");
  }
  if (lower.starts_with("ld_"))
    return invalid(egress::quoted(env) +
                   " is read by the dynamic loader and cannot carry a credential");
  return ok_status();
}

Result<std::vector<HostRule>> parse_credential_hosts(const std::vector<std::string>& hosts) {
  if (hosts.empty() || hosts.size() > kMaxCredentialHosts)
    return invalid("must name 1 to " + std::to_string(kMaxCredentialHosts) + " hosts");
  std::vector<HostRule> rules;
  rules.reserve(hosts.size());
  for (size_t i = 0; i < hosts.size(); ++i) {
    auto rule = parse_host_rule(hosts[i]);
    if (!rule) return invalid("[" + std::to_string(i) + "]: " + rule.error().message);
    if (rule->kind == HostRule::Kind::kAnyName)
      return invalid("[" + std::to_string(i) + "]: " + egress::quoted(hosts[i]) +
                     " would hand the secret to every allowed host; name the hosts");
    rules.push_back(std::move(rule).value());
  }
  return rules;
}

Status check_credential_list(const std::vector<CredentialSpec>& specs) {
  if (specs.size() > kMaxCredentials)
    return invalid("at most " + std::to_string(kMaxCredentials) + " credentials, not " +
                   std::to_string(specs.size()));
  std::set<std::string_view> seen;
  for (const CredentialSpec& spec : specs) {
    if (!seen.insert(spec.env).second)
      return invalid("env " + egress::quoted(spec.env) + " is named by two credentials");
  }
  return ok_status();
}

Result<CredentialSpec> credential_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) return invalid(where + ": must be an object");
  for (const auto& [key, value] : j.items()) {
    (void)value;
    if (key != "hosts" && key != "header" && key != "query" && key != "secret" && key != "env")
      return invalid(where + "." + egress::quoted(key) +
                     ": unknown field (hosts, header, query, secret, env)");
  }
  CredentialSpec spec;

  auto hosts_it = j.find("hosts");
  if (hosts_it == j.end() || !hosts_it->is_array())
    return invalid(where + ".hosts: must be an array of host rules");
  std::vector<std::string> hosts;
  for (const auto& h : *hosts_it) {
    if (!h.is_string()) return invalid(where + ".hosts: entries must be strings");
    hosts.push_back(h.get<std::string>());
  }
  auto rules = parse_credential_hosts(hosts);
  if (!rules) {
    const std::string& m = rules.error().message;
    return invalid(where + ".hosts" + (m.starts_with('[') ? "" : ": ") + m);
  }
  spec.hosts = std::move(rules).value();

  const bool has_header = j.contains("header") && !j["header"].is_null();
  const bool has_query = j.contains("query") && !j["query"].is_null();
  if (has_header == has_query) return invalid(where + ": exactly one of header and query");
  const char* slot_key = has_header ? "header" : "query";
  const std::string slot_text = TRY(string_field(j, where, slot_key));
  auto slot = has_header ? parse_header_slot(slot_text) : parse_query_slot(slot_text);
  if (!slot) return at(where, slot_key, slot.error());
  spec.slot = std::move(slot).value();

  Secret secret(TRY(string_field(j, where, "secret")));
  if (auto st = check_secret(secret.reveal()); !st) return at(where, "secret", st.error());
  spec.secret = std::move(secret);

  spec.env = TRY(string_field(j, where, "env"));
  if (auto st = check_env_name(spec.env); !st) return at(where, "env", st.error());
  return spec;
}

Result<std::vector<CredentialSpec>> credentials_from_json(const nlohmann::json& j,
                                                          const std::string& where) {
  std::vector<CredentialSpec> specs;
  if (j.is_null()) return specs;
  if (!j.is_array()) return invalid(where + ": must be an array of credentials");
  if (j.size() > kMaxCredentials)
    return invalid(where + ": at most " + std::to_string(kMaxCredentials) + " credentials, not " +
                   std::to_string(j.size()));
  for (size_t i = 0; i < j.size(); ++i)
    specs.push_back(TRY(credential_from_json(j[i], where + "[" + std::to_string(i) + "]")));
  if (auto st = check_credential_list(specs); !st)
    return invalid(where + ": " + st.error().message);
  return specs;
}

nlohmann::json credential_view_json(const CredentialSpec& spec) {
  nlohmann::json hosts = nlohmann::json::array();
  for (const HostRule& rule : spec.hosts)
    hosts.push_back(rule.text);
  nlohmann::json entry = {
      {"env", spec.env}, {"hosts", std::move(hosts)}, {"secret", std::string(kRedacted)}};
  entry[spec.slot.kind == CredentialSlot::Kind::kHeader ? "header" : "query"] =
      spec.slot.template_text();
  return entry;
}

}  // namespace carapace::egress
