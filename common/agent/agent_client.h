// AgentClient: the host side of the guest agent protocol (common/agent/PROTOCOL.md). One client
// is one connection, used by one thread at a time; requests on it run one after another (open a
// second client to `kill` an exec that is running on the first).
//
// Everything from the guest is untrusted: frames are read with the protocol's size cap, replies
// must carry the request's id, and output and file data are capped at what was asked for.
// Agent errors come back as Errors whose message starts with the wire code ("not_found: ...");
// agent_error_code() extracts it.
#pragma once

#include <csignal>
#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/agent/wire.h"
#include "common/base/result.h"
#include "common/base/unique_fd.h"

namespace carapace {

struct AgentPing {
  std::string version;
  int protocol = 0;
  uint64_t uptime_ms = 0;
  bool token_set = false;
};

struct AgentExecOptions {
  std::vector<std::pair<std::string, std::string>> env;  // added to the agent's default env
  std::string cwd;                                       // inside the sandbox root; "" = root
  std::string stdin_data;
  uint64_t timeout_ms = 0;                              // 0: none
  uint64_t max_output = agent::kDefaultMaxOutputBytes;  // per stream
  uint64_t id = 0;  // the exec's id for `kill`; 0: the client picks a fresh one
};

struct AgentExecResult {
  uint64_t id = 0;
  bool exited = false;  // else killed by `signal`
  int exit_code = 0;
  int signal = 0;
  bool timed_out = false;
  bool truncated = false;
  uint64_t stdout_bytes = 0;
  uint64_t stderr_bytes = 0;
  uint64_t duration_ms = 0;
};

struct AgentFileInfo {
  std::string name;  // list only
  std::string type;  // file, dir, symlink, fifo, socket, char, block, other
  uint64_t size = 0;
  uint32_t mode = 0;
  int64_t mtime = 0;
};

struct AgentPostRestore {
  std::optional<timespec> clock;  // wall clock to set
  std::string entropy;            // bytes for the guest's RNG (<= kMaxEntropyBytes)
  std::string new_token;          // replaces the token (this client switches to it)
  std::string hostname;
};

using AgentOutputFn = std::function<void(std::string_view)>;

class AgentClient {
 public:
  // A Unix socket the agent listens on itself (carapace-agent --listen unix:PATH).
  // `follow_socket_link` false refuses a symbolic link as the socket
  // (common/base/unix_socket_path.h).
  static Result<AgentClient> connect_unix(const std::string& path, bool follow_socket_link = true);
  // A VM's hybrid vsock socket (Firecracker style): "CONNECT <port>\n", then "OK <n>\n".
  // `handshake_timeout_ms` bounds the wait for that line (a guest that lost the request, e.g.
  // while taking a transport reset after a restore, never answers it).
  static Result<AgentClient> connect_vsock_uds(const std::string& path,
                                               uint32_t port = agent::kAgentVsockPort,
                                               int handshake_timeout_ms = 5000,
                                               bool follow_socket_link = true);

  void set_token(std::string token) { token_ = std::move(token); }
  // Longest wait for each reply frame; -1 (default) waits forever.
  void set_io_timeout_ms(int ms) { io_timeout_ms_ = ms; }

  Result<AgentPing> ping();
  Result<AgentExecResult> exec(const std::vector<std::string>& argv, const AgentExecOptions& opts,
                               const AgentOutputFn& on_stdout, const AgentOutputFn& on_stderr);
  Status put_file(const std::string& remote, std::string_view data, uint32_t mode = 0644,
                  bool parents = false);
  Result<std::string> get_file(const std::string& remote,
                               uint64_t max_bytes = agent::kDefaultMaxFileBytes);
  // The same, streamed: each chunk goes to `on_chunk` as it arrives (nothing is held here); an
  // error from `on_chunk` stops the transfer (the connection is then unusable). An error before
  // the first chunk means nothing was delivered.
  Status get_file_stream(const std::string& remote, uint64_t max_bytes,
                         const std::function<Status(std::string_view)>& on_chunk);
  Result<std::vector<AgentFileInfo>> list(const std::string& remote = ".");
  Result<AgentFileInfo> stat(const std::string& remote);
  Status kill(uint64_t exec_id, int signal = SIGTERM);
  // Returns what the agent applied (e.g. "clock", "token"); what it skipped is not an error.
  Result<std::vector<std::string>> post_restore(const AgentPostRestore& req);
  // The agent replies, then ends (host mode) or resets the VM once this connection closes.
  Status shutdown();
  // Turns the agent's forwarder to the host's egress proxy on (`upstream` "unix:PATH" or
  // "vsock:PORT", listening on 127.0.0.1:`listen_port`, 0 for any), moves it, or with an empty
  // `upstream` off. With `transparent_ports`, also the stub resolver on 127.0.0.1:`dns_port` and
  // the capture of those ports on its stand-in addresses; `env` is added to every exec's
  // environment while the forwarder runs. Returns the proxy URL execs get from
  // now on ("" when off). `ca_pem`: the egress proxy's CA, which the agent writes with a bundle
  // and points every exec's TLS stacks at (SSL_CERT_FILE, ...); "": none.
  Result<std::string> set_egress(const std::string& upstream, uint16_t listen_port = 3128,
                                 const std::vector<uint16_t>& transparent_ports = {},
                                 uint16_t dns_port = 53,
                                 const std::map<std::string, std::string>& env = {},
                                 const std::string& ca_pem = "");

  // Mounts the host's share `tag` (virtio-fs) at `path` ("ro", "rw" or "rw-nodelete"), or
  // unmounts the share at `path` (PROTOCOL.md, mount and umount).
  Status mount(const std::string& tag, const std::string& path, const std::string& mode);
  Status umount(const std::string& path);

  // Raw access for protocol tests: a request object (id and token added when absent), raw
  // bytes, and the next reply frame as JSON text.
  Status send_request(const nlohmann::json& req);
  Status send_raw(std::string_view bytes);
  Result<std::string> read_frame_text();
  uint64_t next_id() { return next_id_++; }
  int fd() const { return fd_.get(); }

 private:
  explicit AgentClient(UniqueFd fd);
  Result<nlohmann::json> read_reply(uint64_t id);
  Result<nlohmann::json> call(nlohmann::json req);

  UniqueFd fd_;
  std::string token_;
  int io_timeout_ms_ = -1;
  uint64_t next_id_;
};

// The wire code of an agent error ("not_found", ...), or "" for a local failure.
std::string agent_error_code(const Error& e);

}  // namespace carapace
