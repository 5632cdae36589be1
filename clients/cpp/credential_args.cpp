#include "clients/cpp/credential_args.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace carapace::sandbox {
namespace {

Error bad(std::string msg) {
  return as_invalid_input(make_error(std::move(msg)));
}

// The keys a SPEC may hold, for the "header= comes last" check.
constexpr std::string_view kKeys[] = {"env",        "host",        "header", "query",
                                      "secret-env", "secret-file", "secret"};

// `text` holds ",KEY=" for one of kKeys: a key written after header=, which would otherwise
// silently become part of its template.
std::string_view key_inside(std::string_view text) {
  for (std::string_view key : kKeys) {
    std::string needle = "," + std::string(key) + "=";
    if (text.find(needle) != std::string_view::npos) return key;
  }
  return {};
}

// Messages never quote an item or an unknown key: either may be a secret pasted in by mistake
// (base64 has '=' in it). They say the item's position instead.

// The first line of `path`, its line ending stripped. Reads at most one byte past the bound, so
// a wrong file (a large one, a device) is neither read whole nor sent.
Result<std::string> first_line(const std::string& flag, const std::string& path) {
  std::string where = flag + ": secret-file=" + path;
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) return as_invalid_input(sys_error(where));
  std::string line;
  int c;
  while ((c = fgetc(f)) != EOF && c != '\n') {
    if (line.size() == kMaxSecretBytes + 1) break;
    line.push_back(static_cast<char>(c));
  }
  bool failed = ferror(f) != 0;
  int err = errno;
  fclose(f);
  if (failed) return as_invalid_input(sys_error(where, err));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.size() > kMaxSecretBytes)
    return bad(where + ": the first line is longer than " + std::to_string(kMaxSecretBytes) +
               " bytes");
  if (line.empty()) return bad(where + ": the first line is empty");
  return line;
}

Result<std::string> from_environment(const std::string& flag, const std::string& var) {
  std::string where = flag + ": secret-env=" + var;
  const char* value = std::getenv(var.c_str());
  if (value == nullptr) return bad(where + ": " + var + " is not set in this environment");
  std::string secret = value;
  if (secret.empty()) return bad(where + ": " + var + " is empty");
  if (secret.size() > kMaxSecretBytes)
    return bad(where + ": longer than " + std::to_string(kMaxSecretBytes) + " bytes");
  return secret;
}

}  // namespace

Result<CredentialRequest> parse_credential_spec(const std::string& flag, const std::string& spec) {
  const std::string usage =
      " (env=NAME,host=H,...,secret-env=VAR|secret-file=PATH,header=TEMPLATE|query=PARAM)";
  CredentialRequest out;
  std::string secret_env, secret_file;
  bool have_env = false, have_header = false, have_query = false;
  std::string_view rest = spec;
  if (rest.empty()) return bad(flag + ": empty" + usage);
  for (size_t n = 1; !rest.empty(); ++n) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    size_t eq = item.find('=');
    if (item.empty()) return bad(flag + ": an empty item (two commas, or one at an end)" + usage);
    if (eq == std::string_view::npos || eq == 0)
      return bad(flag + ": item " + std::to_string(n) + " is not key=value" + usage);
    std::string key(item.substr(0, eq));
    if (key == "header") {
      // The template runs to the end of SPEC, commas included.
      std::string_view value = rest.substr(eq + 1);
      if (std::string_view k = key_inside(value); !k.empty())
        return bad(flag + ": header= must be the last key (everything after it is the " +
                   "template), but " + std::string(k) + "= follows it");
      if (value.empty()) return bad(flag + ": header= is empty");
      out.header = value;
      have_header = true;
      break;
    }
    std::string value(item.substr(eq + 1));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (comma != std::string_view::npos && rest.empty())
      return bad(flag + ": an empty item (two commas, or one at an end)" + usage);
    if (key == "secret")
      return bad(flag +
                 ": secret= is refused: a secret on the command line shows in ps and the shell's "
                 "history; use secret-env=VAR or secret-file=PATH");
    if (key != "env" && key != "host" && key != "query" && key != "secret-env" &&
        key != "secret-file")
      return bad(flag + ": item " + std::to_string(n) +
                 " has an unknown key; the keys are env, host, header, query, secret-env and "
                 "secret-file");
    if (value.empty()) return bad(flag + ": " + key + "= is empty");
    if (key == "env") {
      if (have_env) return bad(flag + ": env= given twice");
      out.env = value;
      have_env = true;
    } else if (key == "host") {
      out.hosts.push_back(value);
    } else if (key == "query") {
      if (have_query) return bad(flag + ": query= given twice");
      out.query = value;
      have_query = true;
    } else if (key == "secret-env") {
      if (!secret_env.empty()) return bad(flag + ": secret-env= given twice");
      secret_env = value;
    } else {
      if (!secret_file.empty()) return bad(flag + ": secret-file= given twice");
      secret_file = value;
    }
  }
  if (!have_env) return bad(flag + ": env=NAME is required (the variable the sandbox sees)");
  if (out.hosts.empty()) return bad(flag + ": host=H is required (where the secret may go)");
  if (have_header == have_query)
    return bad(flag + ": exactly one of header=TEMPLATE and query=PARAM is required");
  if (secret_env.empty() == secret_file.empty())
    return bad(flag + ": exactly one of secret-env=VAR and secret-file=PATH is required");
  out.secret = !secret_env.empty() ? TRY(from_environment(flag, secret_env))
                                   : TRY(first_line(flag, secret_file));
  return out;
}

Result<UpstreamRequest> parse_upstream_spec(const std::string& flag, const std::string& spec) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) return bad(flag + ": expected ALIAS=https://HOST[:PORT]");
  UpstreamRequest out{spec.substr(0, eq), spec.substr(eq + 1)};
  // Not the origin in these messages: one with user information may hold a password.
  if (out.origin.find('@') != std::string::npos)
    return bad(flag + ": " + out.alias +
               ": the origin takes no user information (give credentials with --credential)");
  constexpr std::string_view kScheme = "https://";
  if (out.origin.rfind(kScheme, 0) != 0 || out.origin.size() == kScheme.size())
    return bad(flag + ": " + out.alias + ": the origin must be https://HOST[:PORT]");
  return out;
}

}  // namespace carapace::sandbox
