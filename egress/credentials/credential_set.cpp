#include "egress/credentials/credential_set.h"

#include <set>
#include <utility>

#include "egress/credentials/sentinel.h"
#include "egress/policy/quote.h"

namespace carapace::egress {
namespace {

Error invalid(std::string what) {
  return as_invalid_input(make_error(std::move(what)));
}

Error no_such(std::string_view env) {
  return invalid("no credential has env " + egress::quoted(env));
}

}  // namespace

bool Credential::is_for(const Destination& dest) const {
  for (const HostRule& rule : spec.hosts) {
    if (rule_matches(rule, dest)) return true;
  }
  return false;
}

Result<CredentialSet> CredentialSet::create(std::vector<CredentialSpec> specs) {
  std::vector<std::string> sentinels;
  sentinels.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i)
    sentinels.push_back(TRY(make_sentinel()));
  return with_sentinels(std::move(specs), sentinels);
}

Result<CredentialSet> CredentialSet::with_sentinels(std::vector<CredentialSpec> specs,
                                                    const std::vector<std::string>& sentinels) {
  TRY_STATUS(check_credential_list(specs));
  if (sentinels.size() != specs.size())
    return invalid(std::to_string(specs.size()) + " credentials but " +
                   std::to_string(sentinels.size()) + " sentinels");
  std::set<std::string_view> seen;
  for (size_t i = 0; i < sentinels.size(); ++i) {
    const std::string at = "sentinel [" + std::to_string(i) + "]";
    if (!is_sentinel(sentinels[i]))
      return invalid(at + " is not carapace-cred- and 32 lower-case hex digits");
    if (!seen.insert(sentinels[i]).second) return invalid(at + " is given twice");
  }
  CredentialSet set;
  set.entries_.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i)
    set.entries_.push_back(Credential{std::move(specs[i]), sentinels[i]});
  return set;
}

const Credential* CredentialSet::find(std::string_view env) const {
  for (const Credential& c : entries_) {
    if (c.spec.env == env) return &c;
  }
  return nullptr;
}

Credential* CredentialSet::find_mutable(std::string_view env) {
  return const_cast<Credential*>(std::as_const(*this).find(env));
}

std::map<std::string, std::string> CredentialSet::env() const {
  std::map<std::string, std::string> out;
  for (const Credential& c : entries_)
    out.emplace(c.spec.env, c.sentinel);
  return out;
}

nlohmann::json CredentialSet::to_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const Credential& c : entries_)
    out.push_back(credential_view_json(c.spec));
  return out;
}

std::string CredentialSet::describe() const {
  std::string out =
      std::to_string(entries_.size()) + (entries_.size() == 1 ? " credential" : " credentials");
  for (size_t i = 0; i < entries_.size(); ++i)
    out += (i == 0 ? ": " : "; ") + entries_[i].spec.describe();
  return out;
}

Status CredentialSet::rotate(std::string_view env, Secret secret) {
  Credential* c = find_mutable(env);
  if (c == nullptr) return no_such(env);
  if (auto st = check_secret(secret.reveal()); !st)
    return invalid("credential " + egress::quoted(env) + ": the new secret " + st.error().message);
  c->spec.secret = std::move(secret);
  return ok_status();
}

Status CredentialSet::revoke(std::string_view env) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->spec.env == env) {
      entries_.erase(it);
      return ok_status();
    }
  }
  return no_such(env);
}

}  // namespace carapace::egress
