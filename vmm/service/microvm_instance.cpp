#include "vmm/service/microvm_instance.h"

#include <time.h>
#include <unistd.h>

#include <thread>

#include "vmm/api/http/http_client.h"

namespace carapace::service {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kRetryPause = std::chrono::milliseconds(2);
constexpr size_t kEntropyBytes = 64;
constexpr size_t kTokenBytes = 16;

std::string one_line(std::string s, size_t max = 200) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s.size() > max ? s.substr(0, max) + "..." : s;
}

}  // namespace

Result<std::unique_ptr<MicrovmInstance>> MicrovmInstance::start_paused(
    const std::vector<std::string>& argv, const VmPaths& paths, uint32_t cid,
    std::chrono::milliseconds timeout) {
  auto process = VmmProcess::spawn(argv, paths.log);
  if (!process.ok()) {
    for (const auto& f : paths.all())
      ::unlink(f.c_str());
    return process.take_error();
  }
  std::unique_ptr<MicrovmInstance> vm(new MicrovmInstance(std::move(*process), paths, cid));
  vm->agent_.kind = AgentEndpoint::Kind::kVsockUds;
  vm->agent_.path = paths.vsock_uds;
  const auto deadline = Clock::now() + timeout;
  http::ClientOptions quick;
  quick.timeout = std::chrono::milliseconds(1000);
  for (;;) {
    // The socket exists once the VM is restored and its API serves: one GET proves both.
    if (::access(paths.api_sock.c_str(), F_OK) == 0) {
      auto r = http::http_request(paths.api_sock, "GET", "/vm", {}, {}, quick);
      if (r.ok() && r->status == 200) return vm;
    }
    if (!vm->process_.alive()) {
      std::string why = "restore: " + vm->process_.describe_exit() + ": " + file_tail(paths.log);
      vm->destroy();
      return make_error(why);
    }
    if (Clock::now() >= deadline) {
      vm->destroy();
      return make_error("restore: the VM's control API did not come up within " +
                        std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(kRetryPause);
  }
}

MicrovmInstance::~MicrovmInstance() {
  destroy();
}

void MicrovmInstance::destroy() {
  process_.kill();
  for (const auto& f : paths_.all())
    ::unlink(f.c_str());
}

Result<nlohmann::json> MicrovmInstance::control(const std::string& method,
                                                const std::string& target, const std::string& body,
                                                const std::string& what,
                                                std::chrono::milliseconds timeout) {
  http::ClientOptions options;
  options.timeout = timeout;
  auto r = http::http_request(paths_.api_sock, method, target, body, {}, options);
  if (!r.ok()) {
    if (!process_.alive()) return make_error(what + ": " + process_.describe_exit());
    return make_error(what + ": control API: " + r.error().describe());
  }
  auto doc = nlohmann::json::parse(r->body, nullptr, false);
  if (r->status == 200 && doc.is_object()) return doc;
  std::string message = doc.is_object() && doc.contains("error") && doc["error"].is_object() &&
                                doc["error"].contains("message") &&
                                doc["error"]["message"].is_string()
                            ? doc["error"]["message"].get<std::string>()
                            : one_line(r->body);
  Error e = make_error(what + ": " + message);
  return r->status == 409 || r->status == 400 ? as_invalid_input(e) : e;
}

Status MicrovmInstance::set_paused(bool pause, std::chrono::milliseconds timeout) {
  TRY(control("PUT", pause ? "/vm/pause" : "/vm/resume", "", pause ? "pause" : "resume", timeout));
  paused_ = pause;
  return {};
}

Status MicrovmInstance::pause() {
  return set_paused(true);
}

Status MicrovmInstance::resume() {
  return set_paused(false);
}

Status MicrovmInstance::hand_out(const std::string& current_token, const std::string& hostname,
                                 std::chrono::milliseconds timeout) {
  // A VMM that does not answer its control API promptly (stopped, wedged) is not handed out.
  if (paused_) TRY_STATUS(set_paused(false, std::min<std::chrono::milliseconds>(timeout, 3s)));
  AgentPostRestore req;
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  req.clock = now;
  req.entropy = TRY(random_bytes(kEntropyBytes));
  req.new_token = TRY(random_hex(kTokenBytes));
  req.hostname = hostname;
  const auto deadline = Clock::now() + timeout;
  std::string last = "no attempt";
  // Right after resume the guest is still taking the vsock transport reset and listening
  // again: the first connections may be refused, or lost without an answer (then a short
  // handshake timeout beats the default 5 s; it grows in case the guest is merely slow).
  int handshake_ms = 100;
  while (Clock::now() < deadline) {
    if (!process_.alive()) return make_error("agent: " + process_.describe_exit());
    auto client =
        AgentClient::connect_vsock_uds(paths_.vsock_uds, agent::kAgentVsockPort, handshake_ms);
    handshake_ms = std::min(handshake_ms * 2, 2000);
    if (!client.ok()) {
      last = client.error().describe();
      std::this_thread::sleep_for(kRetryPause);
      continue;
    }
    client->set_io_timeout_ms(static_cast<int>(std::max<int64_t>(
        100,
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count())));
    client->set_token(current_token);
    auto applied = client->post_restore(req);
    if (!applied.ok()) return make_error("agent post_restore: " + applied.error().describe());
    bool token_taken = false;
    for (const auto& a : *applied)
      token_taken |= a == "token";
    // An agent that kept the old token shares it with every other clone of the snapshot.
    if (!token_taken) return make_error("agent post_restore: the agent did not take a new token");
    auto ping = client->ping();
    if (!ping.ok()) return make_error("agent ping after post_restore: " + ping.error().describe());
    agent_.token = req.new_token;
    return {};
  }
  return make_error("agent did not answer within " + std::to_string(timeout.count()) +
                    " ms after resume (" + last + "); console tail: " + file_tail(paths_.console));
}

Status MicrovmInstance::snapshot(const std::string& dir) {
  nlohmann::json body{{"dir", dir}, {"resume", !paused_}};
  TRY(control("PUT", "/snapshot/create", body.dump(), "snapshot", std::chrono::seconds(120)));
  return {};
}

std::string MicrovmInstance::exit_description() {
  return process_.describe_exit();
}

nlohmann::json MicrovmInstance::describe() const {
  // "files": everything this VM has on disk (all inside the template's folder), for the daemon's
  // crash recovery (backend.h). The vsock device's "<vsock>_<port>" sockets are the host
  // listeners', not the VMM's.
  return nlohmann::json{
      {"pid", process_.pid()}, {"api_socket", paths_.api_sock}, {"vsock_socket", paths_.vsock_uds},
      {"cid", cid_},           {"console", paths_.console},     {"log", paths_.log},
      {"files", paths_.all()}};
}

std::map<std::string, uint64_t> MicrovmInstance::counters() {
  std::map<std::string, uint64_t> out;
  auto vm = control("GET", "/vm", "", "counters", std::chrono::seconds(5));
  if (!vm.ok() || !vm->contains("counters") || !(*vm)["counters"].is_object()) return out;
  for (const auto& [name, value] : (*vm)["counters"].items())
    if (value.is_number_unsigned()) out[name] = value.get<uint64_t>();
  return out;
}

}  // namespace carapace::service
