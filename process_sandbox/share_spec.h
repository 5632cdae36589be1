// Workspace mounts: a host folder shared into a sandbox at a guest path, read-only, read-write or
// read-write without deleting (docs/api.md, Mounts). The words and the path rules here are the one
// definition both `carapace run --isolation process --mount` and the daemon's API check against,
// so the CLI and a POST /sandboxes refuse the same guest paths with the same reason. Pure: no host
// call.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"

namespace carapace {

enum class ShareMode { kRo, kRw, kRwNoDelete };
const char* share_mode_name(ShareMode m);  // "ro" | "rw" | "rw-nodelete"
std::optional<ShareMode> parse_share_mode(std::string_view word);

inline constexpr size_t kMaxShares = 8;

// One share as asked: `host` a host folder, `guest` where the sandbox sees it.
struct ShareSpec {
  std::string host;
  std::string guest;
  ShareMode mode = ShareMode::kRo;
};

// A path as both sides take it: absolute, at most 4096 bytes, no NUL, and no empty, `.` or `..`
// component (so "/a//b", "/a/" and "/a/./b" are refused, not rewritten: what is checked is what
// is used). The error says why, without naming a field.
Status check_share_path_syntax(const std::string& path);

// A guest path also: not `/`, no component over 255 bytes, no control character or `,` (the
// CLI's `--mount` separator), and not where the agent and the system live: `/proc`, `/sys`,
// `/dev`, `/run`, `/etc`, `/usr`, `/bin`, `/sbin`, `/lib*`, `/boot` and everything beneath them;
// `/work` and `/tmp` themselves (the agent's work root and the process back end's CA folder),
// though beneath them is fine, but for `/tmp/carapace*`.
Status check_guest_path(const std::string& guest);

// `a` and `b` are the same path or one lies beneath the other (both already checked).
bool guest_paths_overlap(const std::string& a, const std::string& b);

// The list's own rules: at most kMaxShares, each guest path checked, no two overlapping. The
// error names the entry as `<what>[i].guest_path`.
Status check_share_list(const std::vector<ShareSpec>& shares, const std::string& what);

// `host=PATH,guest=PATH[,mode=ro|rw|rw-nodelete]` (`--mount`); the keys in any order, each once.
Result<ShareSpec> parse_share_flag(const std::string& flag, const std::string& value);

}  // namespace carapace
