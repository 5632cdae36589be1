#include "egress/credentials/request_rewrite.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "egress/credentials/ascii_text.h"
#include "egress/policy/quote.h"

namespace carapace::egress {
namespace {

using Reason = CredentialRefusalReason;

// One piece of the head that must be free of sentinels, and where it is for messages.
struct ScanPiece {
  std::string where;
  std::string text;
};

std::string destination_text(const Destination& dest) {
  return egress::quoted(dest.host) + " port " + std::to_string(dest.port);
}

RewriteDecision refused(Reason reason, std::string message, std::string env = "") {
  RewriteDecision d;
  d.kind = RewriteDecision::Kind::kRefused;
  d.refusal = CredentialRefusal{reason, std::move(message), std::move(env)};
  return d;
}

std::optional<std::string> malformed(const RequestHead& head) {
  if (head.target.empty() || head.target[0] != '/') return "the target is not in origin form";
  for (char c : head.target) {
    const auto b = static_cast<unsigned char>(c);
    if (b <= 0x20 || b >= 0x7f) return "the target holds a space, a control or a non-ASCII byte";
    if (c == '#') return "the target holds a fragment";
  }
  for (const auto& [name, value] : head.headers) {
    if (name.empty()) return "a header field has no name";
    for (char c : name) {
      if (!ascii::is_tchar(c)) return "a header field name is not an HTTP token";
    }
    for (char c : value) {
      if (c == '\r' || c == '\n' || c == '\0')
        return "header " + egress::quoted(name) + " holds CR, LF or NUL";
    }
  }
  return std::nullopt;
}

// The first credential refusal a sentinel in `piece` makes, given which credentials are for the
// destination.
std::optional<CredentialRefusal> sentinel_refusal(const CredentialSet& set, const Destination& dest,
                                                  const ScanPiece& piece) {
  auto hit = find_sentinel(set, piece.text);
  if (!hit) return std::nullopt;
  const Credential* c = hit->credential;
  if (c == nullptr)
    return CredentialRefusal{Reason::kUnknownSentinel,
                             piece.where +
                                 " holds a credential sentinel of no live credential, "
                                 "to " +
                                 destination_text(dest) + "; refused as an exfiltration attempt",
                             ""};
  if (!c->is_for(dest))
    return CredentialRefusal{Reason::kSentinelToOtherHost,
                             piece.where + " holds the sentinel of credential " + c->spec.env +
                                 ", which is not for " + destination_text(dest) +
                                 "; refused as an exfiltration attempt",
                             c->spec.env};
  return CredentialRefusal{Reason::kSentinelOutsideSlot,
                           piece.where + " holds the sentinel of credential " + c->spec.env +
                               ", whose only place is its " + c->spec.slot.describe(),
                           c->spec.env};
}

CredentialRefusal foreign(const Credential& c, const Destination& dest) {
  return CredentialRefusal{Reason::kForeignSecret,
                           "the " + c.spec.slot.describe() + " to " + destination_text(dest) +
                               " is not the sentinel of credential " + c.spec.env +
                               "; a key of the sandbox's own is refused there",
                           c.spec.env};
}

void add_used(std::vector<std::string>& used, const std::string& env) {
  if (std::find(used.begin(), used.end(), env) == used.end()) used.push_back(env);
}

// The state of one decision while the head is read.
struct Rewrite {
  const Destination& dest;
  std::vector<const Credential*> own;  // the credentials for dest
  RequestHead out;
  std::vector<std::string> used;
  std::vector<ScanPiece> scan;
  std::optional<CredentialRefusal> foreign_secret;

  void note_foreign(const Credential& c) {
    if (!foreign_secret) foreign_secret = foreign(c, dest);
  }

  // Header slots: a field that is the template of one of the destination's credentials is put
  // in with its secret and not scanned; any other field is scanned, and is a foreign secret if
  // it is a credential's slot.
  void headers(const HeaderFields& in) {
    for (const auto& [name, value] : in) {
      const Credential* slot_of = nullptr;
      const Credential* matched = nullptr;
      const std::string_view trimmed = ascii::trim_ows(value);
      for (const Credential* c : own) {
        const CredentialSlot& slot = c->spec.slot;
        if (slot.kind != CredentialSlot::Kind::kHeader || !ascii::iequals(name, slot.name))
          continue;
        if (slot_of == nullptr) slot_of = c;
        if (trimmed.size() == slot.prefix.size() + c->sentinel.size() + slot.suffix.size() &&
            trimmed.starts_with(slot.prefix) && trimmed.ends_with(slot.suffix) &&
            trimmed.substr(slot.prefix.size(), c->sentinel.size()) == c->sentinel) {
          matched = c;
          break;
        }
      }
      if (matched != nullptr) {
        const CredentialSlot& slot = matched->spec.slot;
        out.headers.emplace_back(
            name, slot.prefix + std::string(matched->spec.secret.reveal()) + slot.suffix);
        add_used(used, matched->spec.env);
        continue;
      }
      if (slot_of != nullptr) note_foreign(*slot_of);
      out.headers.emplace_back(name, value);
      scan.push_back({"header " + egress::quoted(name), name + ": " + value});
    }
  }

  // The target: the path as is, the query parameter by parameter.
  void target(const std::string& in) {
    const size_t q = in.find('?');
    const std::string_view path = std::string_view(in).substr(0, q);
    out.target = std::string(path);
    scan.push_back({"the target's path", std::string(path)});
    std::string joined;  // path and non-slot values without separators: split sentinels
    for (char c : path) {
      if (c != '/') joined += c;
    }
    if (q == std::string::npos) {
      scan.push_back({"the target", std::move(joined)});
      return;
    }
    out.target += '?';
    std::string_view query = std::string_view(in).substr(q + 1);
    while (true) {
      const size_t end = query.find_first_of("&;");
      const std::string_view param = query.substr(0, end);
      joined += parameter(param);
      if (end == std::string_view::npos) break;
      out.target += query[end];
      query.remove_prefix(end + 1);
    }
    scan.push_back({"the target", std::move(joined)});
  }

  // One "name=value" of the query, appended to the output; returns its value if it is to be
  // scanned ("" if it was a slot put in).
  std::string parameter(std::string_view param) {
    const size_t eq = param.find('=');
    const std::string_view raw_name = param.substr(0, eq);
    const std::string_view raw_value =
        eq == std::string_view::npos ? std::string_view() : param.substr(eq + 1);
    const std::string name = ascii::percent_decode(raw_name);
    const Credential* slot_of = nullptr;
    for (const Credential* c : own) {
      const CredentialSlot& slot = c->spec.slot;
      if (slot.kind != CredentialSlot::Kind::kQuery || name != slot.name) continue;
      if (slot_of == nullptr) slot_of = c;
      if (eq != std::string_view::npos && ascii::percent_decode(raw_value) == c->sentinel) {
        out.target += std::string(raw_name) + "=" + ascii::percent_encode(c->spec.secret.reveal());
        add_used(used, c->spec.env);
        return "";
      }
    }
    if (slot_of != nullptr) note_foreign(*slot_of);
    out.target += param;
    // The name as sent, not decoded: a message echoes only bytes the client sent, so a name that
    // percent-decodes to a secret never puts that secret into a refusal (docs/security.md #48).
    scan.push_back({"query parameter " + egress::quoted(raw_name), std::string(param)});
    return std::string(raw_value);
  }
};

// Which refusal wins when a head earns several: the ones that point at exfiltration first.
int severity(Reason r) {
  switch (r) {
    case Reason::kMalformed:
      return 0;
    case Reason::kSentinelToOtherHost:
      return 1;
    case Reason::kUnknownSentinel:
      return 2;
    case Reason::kForeignSecret:
      return 3;
    case Reason::kSentinelOutsideSlot:
      return 4;
  }
  return 5;
}

}  // namespace

RewriteDecision rewrite_request(const CredentialSet& set, const Destination& dest,
                                const RequestHead& head) {
  if (auto why = malformed(head)) return refused(Reason::kMalformed, *why);
  Rewrite rw{dest, {}, {}, {}, {}, std::nullopt};
  for (const Credential& c : set.entries()) {
    if (c.is_for(dest)) rw.own.push_back(&c);
  }
  rw.target(head.target);
  rw.headers(head.headers);

  std::optional<CredentialRefusal> worst = rw.foreign_secret;
  for (const ScanPiece& piece : rw.scan) {
    auto r = sentinel_refusal(set, dest, piece);
    if (r && (!worst || severity(r->reason) < severity(worst->reason))) worst = std::move(r);
  }
  if (worst) return refused(worst->reason, std::move(worst->message), std::move(worst->env));
  if (rw.used.empty()) return RewriteDecision{};
  RewriteDecision d;
  d.kind = RewriteDecision::Kind::kRewritten;
  d.head = std::move(rw.out);
  d.used = std::move(rw.used);
  return d;
}

}  // namespace carapace::egress
