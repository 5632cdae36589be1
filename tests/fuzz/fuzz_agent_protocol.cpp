// Fuzzes both ends of the guest agent protocol (common/agent/PROTOCOL.md): the agent reading
// frames a host client (or anyone reaching its socket) sends, and the host's AgentClient reading
// the replies of a guest, which is untrusted. Everything goes over local socket pairs and a Unix
// socket in a temporary folder; nothing is ever executed or written.
//
// Input: [mode:1] then
//   mode % 3 == 0 (agent, raw stream): the bytes a client sends, served by serve_connection on a
//     context without a token, so only ping runs and every other op must be refused before its
//     handler. Every reply must be a well-formed frame holding a JSON object.
//   mode % 3 == 1 (agent, one request): [op:1] then the request object as JSON, handed to one of
//     the handlers that only read (ping, stat, list, get_file, kill, post_restore) with a root
//     folder holding a file, a directory and a symbolic link out of it. Host mode: post_restore
//     validates and skips.
//   mode % 3 == 2 (host client): [call:1][flags:1] then the agent's side of the stream. Without
//     flags bit 0 it is [len:2] + JSON text pieces, each framed by the target after "@ID" is
//     replaced by the id the client will use (a reply has to carry it to be read at all); with
//     bit 0 the bytes go out unframed. Bit 1 first sends a vsock handshake line (the rest of
//     that piece up to '\n') and connects as to a VMM's hybrid vsock socket.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/agent/agent_client.h"
#include "common/agent/frame.h"
#include "common/base/unique_fd.h"
#include "guest/agent/agent_context.h"
#include "guest/agent/connection.h"
#include "guest/agent/ops.h"
#include "jailer/jail_fs.h"
#include "tests/fuzz/fuzz_memory.h"
#include "tests/fuzz/fuzz_modes.h"

using namespace carapace;
using carapace::fuzz::Input;
using nlohmann::json;

namespace {

// The input is capped so every reply fits the socket buffers: the target reads them only after
// the agent is done.
constexpr size_t kMaxStream = 8192;

std::string_view rest_of(const Input& in) {
  return {reinterpret_cast<const char*>(in.data()), std::min(in.size(), kMaxStream)};
}

struct Fixture {
  std::string dir;  // holds root/ and the host client's socket
  std::string sock;
  UniqueFd listener;
  agent::AgentContext* ctx;
};

Fixture& fixture() {
  static Fixture* f = [] {
    auto* fx = new Fixture();
    char tmpl[] = "/tmp/carapace-fuzz-agent-XXXXXX";
    if (!::mkdtemp(tmpl)) __builtin_trap();
    fx->dir = tmpl;
    std::atexit([] { (void)remove_tree(fixture().dir); });
    const std::string root = fx->dir + "/root";
    if (::mkdir(root.c_str(), 0755) != 0 || ::mkdir((root + "/d").c_str(), 0755) != 0)
      __builtin_trap();
    UniqueFd file(::open((root + "/hello.txt").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    if (!file.valid() || ::write(file.get(), "hello\n", 6) != 6) __builtin_trap();
    if (::symlink("/etc", (root + "/out").c_str()) != 0) __builtin_trap();
    auto sandbox_root = agent::SandboxRoot::open(root);
    if (!sandbox_root.ok()) __builtin_trap();
    // No token: only ping may run. No child registry: nothing here may spawn.
    fx->ctx = new agent::AgentContext(agent::AgentOptions{}, /*system=*/false,
                                      std::move(*sandbox_root), nullptr);

    fx->sock = fx->dir + "/agent.sock";
    fx->listener = UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, fx->sock.c_str(), sizeof addr.sun_path - 1);
    if (::bind(fx->listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fx->listener.get(), 4) != 0)
      __builtin_trap();
    return fx;
  }();
  return *f;
}

void socket_pair(UniqueFd& a, UniqueFd& b) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) __builtin_trap();
  a = UniqueFd(sv[0]);
  b = UniqueFd(sv[1]);
}

void send_or_trap(int fd, std::string_view bytes) {
  if (!agent::send_all(fd, bytes).ok()) __builtin_trap();
}

std::string drain(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// What the agent sent must be whole frames of JSON objects.
void check_replies(std::string_view bytes) {
  while (!bytes.empty()) {
    if (bytes.size() < 4) __builtin_trap();
    uint32_t len = 0;
    std::memcpy(&len, bytes.data(), 4);
    if (len == 0 || len > bytes.size() - 4) __builtin_trap();
    json j = json::parse(bytes.substr(4, len), nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) __builtin_trap();
    bytes.remove_prefix(4 + len);
  }
}

void fuzz_agent_stream(const Input& in) {
  UniqueFd client, agent_side;
  socket_pair(client, agent_side);
  send_or_trap(client.get(), rest_of(in));
  ::shutdown(client.get(), SHUT_WR);
  agent::serve_connection(*fixture().ctx, std::move(agent_side));
  check_replies(drain(client.get()));
}

void fuzz_agent_op(Input& in) {
  static constexpr agent::OpHandler kOps[] = {agent::op_ping, agent::op_stat,
                                              agent::op_list, agent::op_get_file,
                                              agent::op_kill, agent::op_post_restore};
  const agent::OpHandler op = kOps[in.take<uint8_t>() % 6];
  json body = json::parse(rest_of(in), nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) return;
  UniqueFd client, agent_side;
  socket_pair(client, agent_side);
  agent::ConnectionState conn;
  conn.fd = agent_side.get();
  agent::Replier out(conn.fd, 7);
  try {
    (void)op(*fixture().ctx, conn, agent::Request{7, body, out});
  } catch (const std::exception&) {
    // serve_connection turns an exception into an internal error; members are type-checked
    // before use, so a handler that throws on some request is a finding.
    __builtin_trap();
  }
  agent_side.reset();
  check_replies(drain(client.get()));
}

std::string replace_all(std::string s, std::string_view from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

void run_call(AgentClient& c, uint8_t call) {
  switch (call % 9) {
    case 0:
      (void)c.ping();
      break;
    case 1: {
      AgentExecOptions o;
      o.max_output = 64;
      (void)c.exec(
          {"true"}, o, [](std::string_view) {}, [](std::string_view) {});
      break;
    }
    case 2:
      (void)c.put_file("f", "data", 0644, true);
      break;
    case 3:
      (void)c.get_file("f", 64);
      break;
    case 4:
      (void)c.list(".");
      break;
    case 5:
      (void)c.stat("f");
      break;
    case 6:
      (void)c.kill(5);
      break;
    case 7: {
      AgentPostRestore r;
      r.clock = timespec{1, 2};
      r.entropy = "abcd";
      r.new_token = "00ff";
      (void)c.post_restore(r);
      break;
    }
    default:
      (void)c.shutdown();
      break;
  }
}

// The agent's side of the stream: [len:2] + JSON pieces, each framed after "@ID" becomes `id`;
// or the bytes as they are.
std::string agent_stream(std::string_view stream, bool raw, uint64_t id) {
  if (raw) return std::string(stream);
  std::string out;
  Input pieces(reinterpret_cast<const uint8_t*>(stream.data()), stream.size());
  while (!pieces.empty()) {
    const size_t len = std::min<size_t>(pieces.take<uint16_t>(), pieces.size());
    std::string text(reinterpret_cast<const char*>(pieces.data()), len);
    pieces = Input(pieces.data() + len, pieces.size() - len);
    out += agent::encode_frame(replace_all(std::move(text), "@ID", std::to_string(id)));
  }
  return out;
}

void fuzz_host_client(Input& in) {
  Fixture& fx = fixture();
  const uint8_t call = in.take<uint8_t>();
  const uint8_t flags = in.take<uint8_t>();
  std::string_view stream = rest_of(in);

  UniqueFd server;
  std::optional<Result<AgentClient>> client;
  if (flags & 2) {
    // A VMM's hybrid vsock socket answers the CONNECT line first. The answer has to be there
    // while connect_vsock_uds waits for it, so a thread accepts and writes it.
    const size_t nl = stream.find('\n');
    const std::string_view answer = stream.substr(0, nl == std::string_view::npos ? nl : nl + 1);
    stream.remove_prefix(answer.size());
    std::thread agent([&] {
      server = UniqueFd(::accept4(fx.listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
      send_or_trap(server.get(), answer);
      // Without a newline the client would wait for more; the end of the stream says no more.
      if (answer.empty() || answer.back() != '\n') ::shutdown(server.get(), SHUT_WR);
    });
    client.emplace(AgentClient::connect_vsock_uds(fx.sock, agent::kAgentVsockPort, 1000));
    agent.join();
  } else {
    client.emplace(AgentClient::connect_unix(fx.sock));
    if (!client->ok()) __builtin_trap();
    server = UniqueFd(::accept4(fx.listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  }
  if (!client->ok()) return;
  AgentClient& c = client->value();
  c.set_io_timeout_ms(1000);
  // The client's ids start at a random point; the next call uses the one after this.
  const uint64_t id = c.next_id() + 1;
  send_or_trap(server.get(), agent_stream(stream, flags & 1, id));
  ::shutdown(server.get(), SHUT_WR);
  run_call(c, call);
  (void)drain(server.get());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  set_log_level(LogLevel::kError);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An input's post_restore may have set a token: without this the next input's exec could pass
  // the token check and reach the missing child registry (inputs must not depend on each other).
  fixture().ctx->token.set("");
  return fuzz::run_one_mode(data, size, {fuzz_agent_stream, fuzz_agent_op, fuzz_host_client});
}
