#include "common/agent/agent_client.h"

#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "common/agent/base64.h"
#include "common/agent/errors.h"
#include "common/agent/frame.h"
#include "common/base/unix_socket_path.h"

namespace carapace {

using nlohmann::json;

namespace {

// Exec ids double as kill targets, so clients of one agent should not collide: each client
// starts at a random point of a 2^48 space (JSON-safe integers).
uint64_t random_first_id() {
  uint64_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r) r = static_cast<uint64_t>(::getpid());
  return (r & ((uint64_t{1} << 48) - 1)) + 1;
}

Error bad_reply(const std::string& what) {
  return make_error("malformed reply from the agent: " + what);
}

std::optional<uint64_t> get_u64(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<uint64_t>();
}

std::optional<std::string> get_string(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

bool get_bool(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

Result<AgentFileInfo> parse_info(const json& j) {
  AgentFileInfo info;
  auto type = get_string(j, "type");
  auto size = get_u64(j, "size");
  auto mode = get_u64(j, "mode");
  auto mtime = j.find("mtime");
  if (!type || !size || !mode || mtime == j.end() || !mtime->is_number_integer())
    return bad_reply("file description");
  info.type = std::move(*type);
  info.size = *size;
  info.mode = static_cast<uint32_t>(*mode);
  info.mtime = mtime->get<int64_t>();
  if (auto name = get_string(j, "name")) info.name = std::move(*name);
  return info;
}

Result<UniqueFd> connect_path(const std::string& path, bool follow_socket_link) {
  UnixSocketTarget target = TRY(unix_socket_target(path, follow_socket_link));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error("socket");
  int rc;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&target.addr), target.len);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) return sys_error("connect " + path);
  return fd;
}

}  // namespace

std::string agent_error_code(const Error& e) {
  return std::string(agent::code_prefix(e.message));
}

AgentClient::AgentClient(UniqueFd fd) : fd_(std::move(fd)), next_id_(random_first_id()) {}

Result<AgentClient> AgentClient::connect_unix(const std::string& path, bool follow_socket_link) {
  return AgentClient(TRY(connect_path(path, follow_socket_link)));
}

Result<AgentClient> AgentClient::connect_vsock_uds(const std::string& path, uint32_t port,
                                                   int handshake_timeout_ms,
                                                   bool follow_socket_link) {
  UniqueFd fd = TRY(connect_path(path, follow_socket_link));
  TRY_STATUS(agent::send_all(fd.get(), "CONNECT " + std::to_string(port) + "\n"));
  // Byte by byte up to the newline: what follows it is already the agent's stream.
  std::string line;
  while (line.size() < 64) {
    pollfd p{fd.get(), POLLIN, 0};
    int r = ::poll(&p, 1, handshake_timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return make_error("vsock handshake with " + path + ": no answer");
    char c;
    ssize_t n = ::read(fd.get(), &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error("vsock handshake with " + path + ": connection closed");
    if (c == '\n') break;
    line.push_back(c);
  }
  if (!line.starts_with("OK "))
    return make_error("vsock handshake with " + path + " for port " + std::to_string(port) +
                      " refused: '" + line.substr(0, 64) + "'");
  return AgentClient(std::move(fd));
}

Status AgentClient::send_raw(std::string_view bytes) {
  if (!fd_.valid()) return make_error("agent connection is closed");
  return agent::send_all(fd_.get(), bytes);
}

Status AgentClient::send_request(const json& req) {
  json r = req;
  if (!r.contains("id")) r["id"] = next_id();
  if (!r.contains("token") && !token_.empty()) r["token"] = token_;
  std::string text = r.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > agent::kMaxFrameBytes) return make_error("request larger than a frame");
  Status sent = send_raw(agent::encode_frame(text));
  if (sent.ok() || !fd_.valid()) return sent;
  // The agent may have closed the connection with an error frame (e.g. `busy` right after
  // accept); report that rather than the broken pipe.
  std::string payload;
  agent::FrameLimits now{agent::kMaxFrameBytes, 0, agent::kFrameStallTimeoutMs};
  if (agent::read_frame(fd_.get(), now, &payload) == agent::FrameStatus::kOk) {
    json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("error") && j["error"].is_object() &&
        j["error"].contains("code") && j["error"]["code"].is_string()) {
      fd_.reset();
      const json& m = j["error"].contains("message") ? j["error"]["message"] : json("");
      return agent::protocol_error(j["error"]["code"].get<std::string>(),
                                   m.is_string() ? m.get<std::string>() : "");
    }
  }
  fd_.reset();
  return sent;
}

Result<std::string> AgentClient::read_frame_text() {
  if (!fd_.valid()) return make_error("agent connection is closed");
  std::string payload;
  agent::FrameLimits limits{agent::kMaxFrameBytes, io_timeout_ms_, agent::kFrameStallTimeoutMs};
  agent::FrameStatus st = agent::read_frame(fd_.get(), limits, &payload);
  if (st != agent::FrameStatus::kOk) {
    fd_.reset();  // the stream's position is lost
    return make_error(std::string("reading from the agent: ") + agent::frame_status_name(st));
  }
  return payload;
}

Result<json> AgentClient::read_reply(uint64_t id) {
  std::string text = TRY(read_frame_text());
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    fd_.reset();
    return bad_reply("not a JSON object");
  }
  auto err = j.find("error");
  auto rid = j.find("id");
  bool ours = rid != j.end() && rid->is_number_unsigned() && rid->get<uint64_t>() == id;
  if (err != j.end()) {
    std::string code = "io_error", message;
    if (err->is_object()) {
      auto c = err->find("code"), m = err->find("message");
      if (c != err->end() && c->is_string()) code = c->get<std::string>();
      if (m != err->end() && m->is_string()) message = m->get<std::string>();
    }
    // An error without our id is about the connection, which the agent has closed.
    if (!ours || agent::closes_connection(code)) fd_.reset();
    return agent::protocol_error(code, message);
  }
  if (!ours) {
    fd_.reset();
    return bad_reply("reply for another request id");
  }
  return j;
}

Result<json> AgentClient::call(json req) {
  uint64_t id = next_id();
  req["id"] = id;
  TRY_STATUS(send_request(req));
  return read_reply(id);
}

Result<AgentPing> AgentClient::ping() {
  json r = TRY(call({{"op", "ping"}}));
  AgentPing p;
  auto version = get_string(r, "version");
  auto protocol = get_u64(r, "protocol");
  auto uptime = get_u64(r, "uptime_ms");
  auto token_set = r.find("token_set");
  if (!version || !protocol || !uptime || token_set == r.end() || !token_set->is_boolean())
    return bad_reply("ping");
  p.version = std::move(*version);
  p.protocol = static_cast<int>(*protocol);
  p.uptime_ms = *uptime;
  p.token_set = token_set->get<bool>();
  return p;
}

Result<AgentExecResult> AgentClient::exec(const std::vector<std::string>& argv,
                                          const AgentExecOptions& opts,
                                          const AgentOutputFn& on_stdout,
                                          const AgentOutputFn& on_stderr) {
  uint64_t id = opts.id != 0 ? opts.id : next_id();
  json req{{"id", id}, {"op", "exec"}, {"argv", argv}, {"max_output", opts.max_output}};
  if (!opts.env.empty()) {
    json env = json::object();
    for (const auto& [k, v] : opts.env)
      env[k] = v;
    req["env"] = std::move(env);
  }
  if (!opts.cwd.empty()) req["cwd"] = opts.cwd;
  if (!opts.stdin_data.empty()) req["stdin"] = agent::base64_encode(opts.stdin_data);
  if (opts.timeout_ms > 0) req["timeout_ms"] = opts.timeout_ms;
  TRY_STATUS(send_request(req));

  uint64_t got[2] = {0, 0};
  for (;;) {
    json r = TRY(read_reply(id));
    auto stream = r.find("stream");
    if (stream != r.end()) {
      auto data = r.find("data");
      std::optional<std::string> bytes;
      if (data != r.end() && data->is_string())
        bytes = agent::base64_decode(data->get_ref<const std::string&>());
      bool is_out = *stream == "stdout";
      if (!bytes || (!is_out && *stream != "stderr")) {
        fd_.reset();
        return bad_reply("output chunk");
      }
      uint64_t& count = got[is_out ? 0 : 1];
      count += bytes->size();
      if (count > opts.max_output) {  // more than asked for: the guest is not to be trusted
        fd_.reset();
        return bad_reply("more output than max_output");
      }
      const AgentOutputFn& fn = is_out ? on_stdout : on_stderr;
      if (fn) fn(*bytes);
      continue;
    }
    AgentExecResult res;
    res.id = id;
    auto code = r.find("exit_code");
    auto sig = get_u64(r, "signal");
    if (code != r.end() && code->is_number_integer()) {
      res.exited = true;
      res.exit_code = code->get<int>();
    } else if (sig) {
      res.signal = static_cast<int>(*sig);
    } else {
      fd_.reset();
      return bad_reply("exec result");
    }
    res.timed_out = get_bool(r, "timed_out");
    res.truncated = get_bool(r, "truncated");
    res.stdout_bytes = get_u64(r, "stdout_bytes").value_or(0);
    res.stderr_bytes = get_u64(r, "stderr_bytes").value_or(0);
    res.duration_ms = get_u64(r, "duration_ms").value_or(0);
    return res;
  }
}

Status AgentClient::put_file(const std::string& remote, std::string_view data, uint32_t mode,
                             bool parents) {
  uint64_t id = next_id();
  size_t offset = 0;
  do {
    size_t n = std::min(data.size() - offset, agent::kMaxChunkBytes);
    bool more = offset + n < data.size();
    json req{{"id", id},
             {"op", "put_file"},
             {"path", remote},
             {"data", agent::base64_encode(data.substr(offset, n))},
             {"more", more}};
    if (offset == 0) {
      req["mode"] = mode;
      req["parents"] = parents;
      req["size"] = data.size();
    }
    TRY_STATUS(send_request(req));
    TRY(read_reply(id));
    offset += n;
  } while (offset < data.size());
  return {};
}

Status AgentClient::get_file_stream(const std::string& remote, uint64_t max_bytes,
                                    const std::function<Status(std::string_view)>& on_chunk) {
  uint64_t id = next_id();
  TRY_STATUS(send_request({{"id", id}, {"op", "get_file"}, {"path", remote}}));
  uint64_t total = 0;
  for (;;) {
    json r = TRY(read_reply(id));
    auto data = r.find("data");
    if (data == r.end()) break;
    std::optional<std::string> bytes;
    if (data->is_string()) bytes = agent::base64_decode(data->get_ref<const std::string&>());
    if (!bytes) {
      fd_.reset();
      return bad_reply("file chunk");
    }
    if (bytes->size() > max_bytes - total) {
      fd_.reset();  // the rest of the stream is not read
      return agent::protocol_error(
          agent::code::kTooLarge,
          "'" + remote + "' is larger than " + std::to_string(max_bytes) + " bytes");
    }
    total += bytes->size();
    if (Status s = on_chunk(*bytes); !s.ok()) {
      fd_.reset();
      return s;
    }
  }
  return {};
}

Result<std::string> AgentClient::get_file(const std::string& remote, uint64_t max_bytes) {
  std::string out;
  TRY_STATUS(get_file_stream(remote, max_bytes, [&](std::string_view chunk) -> Status {
    out.append(chunk);
    return {};
  }));
  return out;
}

Result<std::vector<AgentFileInfo>> AgentClient::list(const std::string& remote) {
  json r = TRY(call({{"op", "list"}, {"path", remote}}));
  auto entries = r.find("entries");
  if (entries == r.end() || !entries->is_array()) return bad_reply("list");
  std::vector<AgentFileInfo> out;
  for (const auto& e : *entries)
    out.push_back(TRY(parse_info(e)));
  return out;
}

Result<AgentFileInfo> AgentClient::stat(const std::string& remote) {
  json r = TRY(call({{"op", "stat"}, {"path", remote}}));
  return parse_info(r);
}

Status AgentClient::kill(uint64_t exec_id, int signal) {
  TRY(call({{"op", "kill"}, {"target", exec_id}, {"signal", signal}}));
  return {};
}

Result<std::vector<std::string>> AgentClient::post_restore(const AgentPostRestore& req) {
  json r{{"op", "post_restore"}};
  if (req.clock)
    r["clock"] = {{"sec", static_cast<uint64_t>(req.clock->tv_sec)},
                  {"nsec", static_cast<uint64_t>(req.clock->tv_nsec)}};
  if (!req.entropy.empty()) r["entropy"] = agent::base64_encode(req.entropy);
  if (!req.new_token.empty()) r["new_token"] = req.new_token;
  if (!req.hostname.empty()) r["hostname"] = req.hostname;
  json reply = TRY(call(std::move(r)));
  auto applied = reply.find("applied");
  if (applied == reply.end() || !applied->is_array()) return bad_reply("post_restore");
  std::vector<std::string> out;
  for (const auto& a : *applied)
    if (a.is_string()) out.push_back(a.get<std::string>());
  if (!req.new_token.empty()) token_ = req.new_token;
  return out;
}

Result<std::string> AgentClient::set_egress(const std::string& upstream, uint16_t listen_port,
                                            const std::vector<uint16_t>& transparent_ports,
                                            uint16_t dns_port,
                                            const std::map<std::string, std::string>& env,
                                            const std::string& ca_pem) {
  json r{{"op", "egress"}, {"listen_port", listen_port}};
  if (!transparent_ports.empty()) {
    r["transparent_ports"] = transparent_ports;
    r["dns_port"] = dns_port;
  }
  if (!env.empty()) r["env"] = env;
  if (!ca_pem.empty()) r["ca_pem"] = ca_pem;
  r["upstream"] = upstream.empty() ? json(nullptr) : json(upstream);
  json reply = TRY(call(std::move(r)));
  auto proxy = reply.find("proxy");
  if (proxy == reply.end() || !(proxy->is_null() || proxy->is_string())) return bad_reply("egress");
  return proxy->is_null() ? std::string() : proxy->get<std::string>();
}

Status AgentClient::mount(const std::string& tag, const std::string& path,
                          const std::string& mode) {
  TRY(call({{"op", "mount"}, {"tag", tag}, {"path", path}, {"mode", mode}}));
  return {};
}

Status AgentClient::umount(const std::string& path) {
  TRY(call({{"op", "umount"}, {"path", path}}));
  return {};
}

Status AgentClient::shutdown() {
  TRY(call({{"op", "shutdown"}}));
  fd_.reset();  // the agent waits for this close before it goes
  return {};
}

}  // namespace carapace
