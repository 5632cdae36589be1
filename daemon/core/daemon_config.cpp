#include "daemon/core/daemon_config.h"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/base/unique_fd.h"
#include "common/http/json_util.h"
#include "process_sandbox/share_spec.h"

namespace carapace::service {
namespace {

using nlohmann::json;

Error bad(const std::string& field, const std::string& why) {
  return as_invalid_input(make_error("config: " + field + ": " + why));
}

Result<uint64_t> get_uint(const json& o, const std::string& field, uint64_t lo, uint64_t hi) {
  const json& v = o.at(field);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    return bad(field, "must be a non-negative integer");
  uint64_t n = v.get<uint64_t>();
  if (n < lo || n > hi)
    return bad(field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return n;
}

Result<double> get_seconds(const json& o, const std::string& field, double lo, double hi) {
  const json& v = o.at(field);
  if (!v.is_number()) return bad(field, "must be a number of seconds");
  double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi)
    return bad(field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return d;
}

Result<TcpConfig> parse_tcp(const json& v) {
  if (!v.is_object()) return bad("tcp", "must be an object {\"port\", \"token_file\"}");
  TcpConfig tcp;
  for (const auto& [key, value] : v.items()) {
    if (key == "port") {
      tcp.port = static_cast<uint16_t>(TRY(get_uint(v, "port", 0, 65535)));
    } else if (key == "token_file") {
      if (!value.is_string() || value.get<std::string>().empty())
        return bad("tcp.token_file", "must be a non-empty path");
      tcp.token_file = value.get<std::string>();
    } else {
      return bad("tcp." + key, "unknown field");
    }
  }
  if (tcp.token_file.empty())
    return bad("tcp.token_file", "is required: TCP is never open without a bearer token");
  return tcp;
}

constexpr size_t kMaxMountRoots = 64;

Result<std::vector<std::string>> parse_mount_roots(const json& v) {
  if (!v.is_array()) return bad("mount_roots", "must be an array of absolute paths");
  if (v.size() > kMaxMountRoots)
    return bad("mount_roots", "at most " + std::to_string(kMaxMountRoots) + " folders");
  std::vector<std::string> roots;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string field = "mount_roots[" + std::to_string(i) + "]";
    if (!v[i].is_string()) return bad(field, "must be a string");
    const std::string root = v[i].get<std::string>();
    if (Status s = check_share_path_syntax(root); !s.ok()) return bad(field, s.error().message);
    if (root == "/") return bad(field, "cannot be / (it would share every host folder)");
    roots.push_back(root);
  }
  return roots;
}

}  // namespace

Result<DaemonConfig> parse_daemon_config(std::string_view json_text) {
  auto parsed = http::parse_json(json_text);
  if (!parsed.ok()) return bad("(file)", parsed.error().message);
  const json& o = *parsed;
  if (!o.is_object()) return bad("(file)", "must be a JSON object");
  DaemonConfig c;
  constexpr uint64_t kMax32 = 0xffffffffu;
  for (const auto& [key, value] : o.items()) {
    if (key == "max_sandboxes") {
      c.max_sandboxes = static_cast<uint32_t>(TRY(get_uint(o, key, 1, 100000)));
    } else if (key == "max_memory_mib") {
      c.max_memory_mib = TRY(get_uint(o, key, 1, uint64_t{1} << 32));
    } else if (key == "default_ttl_s") {
      c.default_ttl_s = TRY(get_uint(o, key, 1, kMax32));
    } else if (key == "max_ttl_s") {
      c.max_ttl_s = TRY(get_uint(o, key, 1, kMax32));
    } else if (key == "max_request_bytes") {
      c.max_request_bytes = TRY(get_uint(o, key, 1024, uint64_t{64} << 20));
    } else if (key == "max_upload_bytes") {
      c.max_upload_bytes = TRY(get_uint(o, key, 1024, uint64_t{4} << 30));
    } else if (key == "health_interval_s") {
      c.health_interval_s = TRY(get_seconds(o, key, 0, 3600));
    } else if (key == "health_timeout_s") {
      c.health_timeout_s = TRY(get_seconds(o, key, 0.01, 600));
    } else if (key == "header_timeout_s") {
      c.header_timeout_s = TRY(get_seconds(o, key, 0.1, 600));
    } else if (key == "vm_start_timeout_s") {
      c.vm_start_timeout_s = TRY(get_seconds(o, key, 0.1, 3600));
    } else if (key == "hand_out_timeout_s") {
      c.hand_out_timeout_s = TRY(get_seconds(o, key, 0.1, 3600));
    } else if (key == "max_connections") {
      c.max_connections = static_cast<uint32_t>(TRY(get_uint(o, key, 1, 4096)));
    } else if (key == "on_shutdown") {
      if (value == "destroy") {
        c.on_shutdown = OnShutdown::kDestroy;
      } else if (value == "persist") {
        c.on_shutdown = OnShutdown::kPersist;
      } else {
        return bad(key, "must be \"destroy\" or \"persist\"");
      }
    } else if (key == "tcp") {
      c.tcp = TRY(parse_tcp(value));
    } else if (key == "seccomp") {
      if (!value.is_boolean()) return bad(key, "must be true or false");
      c.seccomp = value.get<bool>();
    } else if (key == "egress_ca_file") {
      if (!value.is_string() || value.get<std::string>().empty() ||
          value.get<std::string>()[0] != '/')
        return bad(key, "must be an absolute path");
      c.egress_ca_file = value.get<std::string>();
    } else if (key == "mount_roots") {
      c.mount_roots = TRY(parse_mount_roots(value));
    } else if (key == "jail") {
      if (!value.is_boolean()) return bad(key, "must be true or false");
      c.jail = value.get<bool>();
    } else {
      return bad(key, "unknown field");
    }
  }
  if (c.default_ttl_s > c.max_ttl_s)
    return bad("default_ttl_s", "is above max_ttl_s (" + std::to_string(c.max_ttl_s) + ")");
  if (c.jail.value_or(false) && !c.seccomp)
    return bad("jail",
               "cannot be true with seccomp false (the jail clears the environment that "
               "running a VMM without seccomp needs)");
  return c;
}

bool jail_microvms(const DaemonConfig& c) {
  return c.jail.value_or(c.seccomp && ::geteuid() == 0);
}

namespace {

Result<std::string> read_small_file(const std::string& path, size_t cap) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return as_invalid_input(sys_error("cannot open " + path));
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return as_invalid_input(sys_error("cannot read " + path));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > cap)
      return as_invalid_input(make_error(path + ": larger than " + std::to_string(cap) + " bytes"));
  }
  return text;
}

}  // namespace

Result<DaemonConfig> load_daemon_config(const std::string& path) {
  std::string text = TRY(read_small_file(path, 64 * 1024));
  auto c = parse_daemon_config(text);
  if (!c.ok()) return as_invalid_input(make_error(path + ": " + c.error().message));
  return c;
}

Result<std::string> load_token_file(const std::string& path) {
  std::string text = TRY(read_small_file(path, 4096));
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
    line.pop_back();
  size_t start = line.find_first_not_of(" \t");
  line = start == std::string::npos ? "" : line.substr(start);
  if (line.size() < 16)
    return as_invalid_input(make_error(path + ": the token must be at least 16 characters"));
  return line;
}

}  // namespace carapace::service
