// Structured logs of the daemon: one JSON object per line on stderr,
//   {"ts": "2026-11-30T12:00:00.123Z", "level": "info", "msg": "sandbox created", "id": ...}
// so log collectors can filter by field. Lines are written whole under a lock (threads never
// interleave inside a line).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace carapace::service {

// `fields` (an object, or null) is merged after ts/level/msg.
void json_log(std::string_view level, std::string_view msg, const nlohmann::json& fields = {});

// Where lines go (default stderr); tests capture them. fd must stay open.
void set_json_log_fd(int fd);

// RFC 3339 UTC with milliseconds: "2026-11-30T12:00:00.123Z".
std::string rfc3339(std::chrono::system_clock::time_point t);

}  // namespace carapace::service
