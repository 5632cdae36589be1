#include "process_sandbox/share_spec.h"

#include <array>

#include "common/base/flag_values.h"

namespace carapace {
namespace {

constexpr size_t kMaxPathBytes = 4096;
constexpr size_t kMaxNameBytes = 255;

// Where a share would hide what the agent or the system needs: the folder and all beneath it.
constexpr std::array<std::string_view, 13> kReservedTrees = {
    "/proc", "/sys", "/dev",   "/run",   "/etc",    "/usr", "/bin",
    "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot"};
// Folders the agent writes itself (its work root's `.carapace/`, the process back end's CA
// files in /tmp): a share may go beneath them, not over them.
constexpr std::array<std::string_view, 2> kReservedExact = {"/work", "/tmp"};

Error bad(const std::string& m) {
  return as_invalid_input(make_error(m));
}

bool beneath_or_at(std::string_view path, std::string_view dir) {
  return path == dir ||
         (path.size() > dir.size() && path.substr(0, dir.size()) == dir && path[dir.size()] == '/');
}

}  // namespace

const char* share_mode_name(ShareMode m) {
  switch (m) {
    case ShareMode::kRo:
      return "ro";
    case ShareMode::kRw:
      return "rw";
    case ShareMode::kRwNoDelete:
      break;
  }
  return "rw-nodelete";
}

std::optional<ShareMode> parse_share_mode(std::string_view word) {
  for (ShareMode m : {ShareMode::kRo, ShareMode::kRw, ShareMode::kRwNoDelete})
    if (word == share_mode_name(m)) return m;
  return std::nullopt;
}

Status check_share_path_syntax(const std::string& path) {
  if (path.empty() || path[0] != '/') return bad("must be an absolute path");
  if (path.size() > kMaxPathBytes)
    return bad("longer than " + std::to_string(kMaxPathBytes) + " bytes");
  if (path.find('\0') != std::string::npos) return bad("holds NUL");
  if (path == "/") return ok_status();
  // Every component between two slashes (or after the last one) must be a name.
  size_t start = 1;
  for (;;) {
    size_t end = path.find('/', start);
    std::string_view comp(path.data() + start,
                          (end == std::string::npos ? path.size() : end) - start);
    if (comp.empty()) return bad("has an empty component (\"//\" or a trailing \"/\")");
    if (comp == "." || comp == "..") return bad("has a '.' or '..' component");
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return ok_status();
}

Status check_guest_path(const std::string& guest) {
  TRY_STATUS(check_share_path_syntax(guest));
  if (guest == "/") return bad("cannot be / (the sandbox's root)");
  size_t start = 1;
  while (start < guest.size()) {
    size_t end = guest.find('/', start);
    if (end == std::string::npos) end = guest.size();
    if (end - start > kMaxNameBytes)
      return bad("has a component longer than " + std::to_string(kMaxNameBytes) + " bytes");
    start = end + 1;
  }
  for (unsigned char c : guest)
    if (c < 0x20 || c == 0x7f || c == ',') return bad("holds a control character or ','");
  for (std::string_view tree : kReservedTrees)
    if (beneath_or_at(guest, tree))
      return bad("cannot be " + std::string(tree) + " or beneath it (the sandbox's system)");
  for (std::string_view dir : kReservedExact)
    if (guest == dir)
      return bad("cannot be " + std::string(dir) + " itself (the agent writes there); use a " +
                 "folder beneath it");
  if (guest.rfind("/tmp/carapace", 0) == 0)
    return bad("cannot be /tmp/carapace* (the agent's own files)");
  return ok_status();
}

bool guest_paths_overlap(const std::string& a, const std::string& b) {
  return beneath_or_at(a, b) || beneath_or_at(b, a);
}

Status check_share_list(const std::vector<ShareSpec>& shares, const std::string& what) {
  if (shares.size() > kMaxShares)
    return bad(what + ": at most " + std::to_string(kMaxShares) + " mounts");
  for (size_t i = 0; i < shares.size(); ++i) {
    const std::string field = what + "[" + std::to_string(i) + "].guest_path";
    if (Status s = check_guest_path(shares[i].guest); !s.ok())
      return bad(field + ": " + s.error().message);
    for (size_t j = 0; j < i; ++j)
      if (guest_paths_overlap(shares[i].guest, shares[j].guest))
        return bad(field + ": " + shares[i].guest + " is the same as or nested with " + what + "[" +
                   std::to_string(j) + "] (" + shares[j].guest + ")");
  }
  return ok_status();
}

Result<ShareSpec> parse_share_flag(const std::string& flag, const std::string& value) {
  ShareSpec s;
  bool have_host = false, have_guest = false, have_mode = false;
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(',', start);
    if (end == std::string::npos) end = value.size();
    const std::string item = value.substr(start, end - start);
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string v = eq == std::string::npos ? "" : item.substr(eq + 1);
    bool* seen = key == "host"    ? &have_host
                 : key == "guest" ? &have_guest
                 : key == "mode"  ? &have_mode
                                  : nullptr;
    if (eq == std::string::npos || seen == nullptr)
      return flag_error(flag + ": expected host=PATH,guest=PATH[,mode=ro|rw|rw-nodelete], got '" +
                        item + "'");
    if (*seen) return flag_error(flag + ": " + key + "= given twice");
    *seen = true;
    if (key == "mode") {
      auto m = parse_share_mode(v);
      if (!m) return flag_error(flag + ": mode: expected ro, rw or rw-nodelete, got '" + v + "'");
      s.mode = *m;
    } else {
      if (Status st = check_share_path_syntax(v); !st.ok())
        return flag_error(flag + ": " + key + "=" + v + ": " + st.error().message);
      (key == "host" ? s.host : s.guest) = v;
    }
    start = end + 1;
  }
  if (!have_host || !have_guest) return flag_error(flag + ": host= and guest= are required");
  if (Status st = check_guest_path(s.guest); !st.ok())
    return flag_error(flag + ": guest=" + s.guest + ": " + st.error().message);
  return s;
}

}  // namespace carapace
