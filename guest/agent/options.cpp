#include "guest/agent/options.h"

#include <cctype>
#include <optional>

#include "common/base/flag_values.h"

namespace carapace::agent {

const char kAgentUsage[] =
    "usage: carapace-agent [--listen vsock[:PORT] | --listen unix:PATH | --listen fd:N] [--token "
    "HEX | --token-fd "
    "N]\n"
    "                      [--root DIR] [--mount-point PATH]... [--max-file-bytes N]\n"
    "                      [--max-connections N]\n"
    "As PID 1 of a guest it sets up the root file system first and reads carapace.token= and\n"
    "carapace.selftest= from the kernel command line (see guest/agent/README.md).\n";

namespace {

Result<uint64_t> parse_number(const std::string& flag, std::string_view text, uint64_t max) {
  const std::optional<uint64_t> v = decimal_u64(text);
  if (!v || *v > max)
    return flag_error(flag + ": '" + std::string(text) + "' is not a number in 0.." +
                      std::to_string(max));
  return *v;
}

Status parse_listen(std::string_view spec, AgentOptions* o) {
  if (spec == "vsock") {
    o->listen = AgentOptions::Listen::kVsock;
    return {};
  }
  if (spec.starts_with("vsock:")) {
    o->listen = AgentOptions::Listen::kVsock;
    o->vsock_port =
        static_cast<uint32_t>(TRY(parse_number("--listen", spec.substr(6), 0xfffffffe)));
    return {};
  }
  if (spec.starts_with("unix:") && spec.size() > 5) {
    o->listen = AgentOptions::Listen::kUnix;
    o->unix_path = std::string(spec.substr(5));
    return {};
  }
  if (spec.starts_with("fd:")) {
    o->listen = AgentOptions::Listen::kFd;
    o->listen_fd = static_cast<int>(TRY(parse_number("--listen", spec.substr(3), 1023)));
    if (o->listen_fd < 3) return flag_error("--listen fd:N: N must be 3 or above");
    return {};
  }
  return flag_error("--listen: expected vsock, vsock:PORT, unix:PATH or fd:N, got '" +
                    std::string(spec) + "'");
}

}  // namespace

bool valid_token(std::string_view token) {
  if (token.empty() || token.size() > kMaxTokenChars) return false;
  for (char c : token)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool valid_selftest_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '.') return false;
  for (char c : name) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Result<AgentOptions> parse_agent_args(const std::vector<std::string>& args) {
  AgentOptions o;
  TRY_STATUS(
      for_each_flag_pair(args, o.help, [&o](const std::string& a, const std::string& v) -> Status {
        if (a == "--listen") {
          TRY_STATUS(parse_listen(v, &o));
        } else if (a == "--token") {
          if (!valid_token(v))
            return flag_error("--token: expected 1.." + std::to_string(kMaxTokenChars) +
                              " hex digits");
          o.token = v;
        } else if (a == "--token-fd") {
          o.token_fd = static_cast<int>(TRY(parse_number(a, v, 1023)));
          if (o.token_fd < 3)
            return flag_error("--token-fd: must be 3 or above (not stdin/out/err)");
        } else if (a == "--root") {
          if (v.empty() || v.front() != '/') return flag_error("--root: expected an absolute path");
          o.root = v;
        } else if (a == "--mount-point") {
          if (v.empty() || v.front() != '/')
            return flag_error("--mount-point: expected an absolute path");
          if (o.mount_points.size() >= 64) return flag_error("--mount-point: at most 64");
          o.mount_points.push_back(v);
        } else if (a == "--max-file-bytes") {
          o.max_file_bytes = TRY(parse_number(a, v, uint64_t{1} << 40));
        } else if (a == "--max-connections") {
          o.max_connections = static_cast<int>(TRY(parse_number(a, v, 4096)));
          if (o.max_connections == 0) return flag_error("--max-connections: must be at least 1");
        } else {
          return flag_error("unknown flag '" + a + "'");
        }
        return {};
      }));
  if (!o.token.empty() && o.token_fd >= 0)
    return flag_error("--token and --token-fd exclude each other");
  return o;
}

KernelCmdline parse_kernel_cmdline(std::string_view cmdline) {
  KernelCmdline out;
  size_t i = 0;
  while (i < cmdline.size()) {
    while (i < cmdline.size() && std::isspace(static_cast<unsigned char>(cmdline[i])))
      ++i;
    size_t start = i;
    while (i < cmdline.size() && !std::isspace(static_cast<unsigned char>(cmdline[i])))
      ++i;
    std::string_view word = cmdline.substr(start, i - start);
    if (word.starts_with("carapace.token=")) {
      std::string_view v = word.substr(15);
      if (valid_token(v))
        out.token = std::string(v);
      else
        out.problems.push_back("carapace.token= is not 1.." + std::to_string(kMaxTokenChars) +
                               " hex digits; ignored");
    } else if (word.starts_with("carapace.selftest=")) {
      std::string_view v = word.substr(18);
      if (valid_selftest_name(v))
        out.selftest = std::string(v);
      else
        out.problems.push_back("carapace.selftest= is not a plain file name; ignored");
    }
  }
  return out;
}

}  // namespace carapace::agent
