// Fuzzes the credential decision (egress/credentials) on what a sandboxed client controls: the
// request head its proxy is about to send on, and hostnames that may not carry a sentinel.
//
// Two credentials with fixed sentinels: GITHUB_TOKEN (header "Authorization: Bearer {secret}",
// api.github.com) and EXAMPLE_KEY (query "api_key", *.example.com:443 and example.com:8080). In
// the input, "@G" and "@E" stand for their sentinels (the seeds may also spell them out).
//
// Input: [mode:1] then
//   mode % 2 == 0: [dest:1] (one of a fixed list of destinations, own hosts and others) then a
//     head: the target up to the first '\n', then header lines "name:value" ('\r' before a '\n'
//     dropped; a line without ':' is a name with an empty value). rewrite_request must answer
//     one-line refusals that hold no secret the input did not; a head with a live sentinel of a
//     credential not for the destination is refused; a rewritten head keeps its fields' names and
//     order and holds a secret, and the same call on it again is refused as a foreign secret (a
//     slot now holds something other than the sentinel).
//   mode % 2 == 1: the rest as a hostname for refuse_sentinel_in and sentinel_scan_form: one-line
//     messages without secrets; a name with a raw live sentinel is refused.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "egress/credentials/credential_set.h"
#include "egress/credentials/credential_spec.h"
#include "egress/credentials/request_rewrite.h"
#include "egress/credentials/sentinel_scan.h"
#include "tests/fuzz/fuzz_memory.h"
#include "tests/fuzz/fuzz_modes.h"

using namespace carapace;
using namespace carapace::egress;
using carapace::fuzz::Input;

namespace {

constexpr std::string_view kGithubSentinel = "carapace-cred-11111111111111111111111111111111";
constexpr std::string_view kExampleSentinel = "carapace-cred-22222222222222222222222222222222";
constexpr std::string_view kGithubSecret = "ghp_FuzzSecretGithub0123456789";
constexpr std::string_view kExampleSecret = "fuzz/example+secret=&value";

const CredentialSet& credentials() {
  static const CredentialSet set = [] {
    auto specs = credentials_from_json(nlohmann::json::parse(R"([
          {"hosts": ["api.github.com"], "header": "Authorization: Bearer {secret}",
           "secret": "ghp_FuzzSecretGithub0123456789", "env": "GITHUB_TOKEN"},
          {"hosts": ["*.example.com:443", "example.com:8080"], "query": "api_key",
           "secret": "fuzz/example+secret=&value", "env": "EXAMPLE_KEY"}])"),
                                       "credentials");
    return CredentialSet::with_sentinels(std::move(specs).value(), {std::string(kGithubSentinel),
                                                                    std::string(kExampleSentinel)})
        .value();
  }();
  return set;
}

const std::vector<Destination>& destinations() {
  static const std::vector<Destination> dests = [] {
    std::vector<Destination> v;
    const std::pair<const char*, uint16_t> list[] = {
        {"api.github.com", 443}, {"api.github.com", 80}, {"www.example.com", 443},
        {"example.com", 8080},   {"example.com", 443},   {"a.b.example.com", 80},
        {"evil.example", 443},   {"203.0.113.7", 80}};
    for (const auto& [host, port] : list)
      v.push_back(parse_destination(host, port).value());
    return v;
  }();
  return dests;
}

std::string expand(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '@' && i + 1 < text.size() && (text[i + 1] == 'G' || text[i + 1] == 'E')) {
      out += text[i + 1] == 'G' ? kGithubSentinel : kExampleSentinel;
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

// A message quotes the names a client sent (header and parameter names, hosts), so it holds a
// secret only when the client sent that secret itself: `input` is what it sent.
void check_message(const std::string& s, std::string_view input) {
  if (s.empty() || contains(s, "\n") || contains(s, "\r")) __builtin_trap();
  for (std::string_view secret : {kGithubSecret, kExampleSecret}) {
    if (contains(s, secret) && !contains(input, secret)) __builtin_trap();
  }
}

RequestHead parse_head(std::string_view text) {
  RequestHead head;
  size_t nl = text.find('\n');
  head.target = std::string(text.substr(0, nl));
  while (nl != std::string_view::npos) {
    text.remove_prefix(nl + 1);
    nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (line.ends_with('\r')) line.remove_suffix(1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      head.headers.emplace_back(std::string(line), "");
    else
      head.headers.emplace_back(std::string(line.substr(0, colon)),
                                std::string(line.substr(colon + 1)));
  }
  return head;
}

bool holds(const RequestHead& head, std::string_view needle) {
  if (contains(head.target, needle)) return true;
  for (const auto& [name, value] : head.headers) {
    if (contains(name, needle) || contains(value, needle)) return true;
  }
  return false;
}

void fuzz_head(Input& in) {
  const Destination& dest = destinations()[in.take<uint8_t>() % destinations().size()];
  const std::string text =
      expand(std::string_view(reinterpret_cast<const char*>(in.data()), in.size()));
  const RequestHead head = parse_head(text);
  const CredentialSet& set = credentials();
  const RewriteDecision d = rewrite_request(set, dest, head);
  for (const Credential& c : set.entries()) {
    if (!c.is_for(dest) && holds(head, c.sentinel) && d.kind != RewriteDecision::Kind::kRefused)
      __builtin_trap();
  }
  switch (d.kind) {
    case RewriteDecision::Kind::kRefused:
      check_message(d.refusal.message, text);
      if (refusal_reason_name(d.refusal.reason) == nullptr) __builtin_trap();
      return;
    case RewriteDecision::Kind::kUnchanged:
      if (!d.used.empty()) __builtin_trap();
      return;
    case RewriteDecision::Kind::kRewritten:
      break;
  }
  if (d.used.empty() || d.head.headers.size() != head.headers.size()) __builtin_trap();
  for (size_t i = 0; i < head.headers.size(); ++i) {
    if (d.head.headers[i].first != head.headers[i].first) __builtin_trap();
  }
  if (!holds(d.head, kGithubSecret) && !holds(d.head, "fuzz%2Fexample%2Bsecret%3D%26value"))
    __builtin_trap();
  if (holds(d.head, kGithubSentinel) || holds(d.head, kExampleSentinel)) __builtin_trap();
  const RewriteDecision again = rewrite_request(set, dest, d.head);
  if (again.kind != RewriteDecision::Kind::kRefused ||
      again.refusal.reason != CredentialRefusalReason::kForeignSecret)
    __builtin_trap();
  check_message(again.refusal.message, text);
}

void fuzz_hostname(Input& in) {
  const std::string name =
      expand(std::string_view(reinterpret_cast<const char*>(in.data()), in.size()));
  if (sentinel_scan_form(name).size() > name.size()) __builtin_trap();
  const auto r = refuse_sentinel_in(credentials(), "the CONNECT target", name);
  if (r) check_message(r->message, name);
  if ((contains(name, kGithubSentinel) || contains(name, kExampleSentinel)) && !r) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::run_one_mode(data, size, {fuzz_head, fuzz_hostname});
}
