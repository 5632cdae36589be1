#include "daemon/backends/microvm/microvm_instance.h"

#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <thread>

#include "common/base/log.h"
#include "common/http/http_client.h"
#include "jailer/jail_fs.h"
#include "jailer/supervisor.h"

namespace carapace::service {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kRetryPause = std::chrono::milliseconds(2);
constexpr size_t kEntropyBytes = 64;
constexpr size_t kTokenBytes = 16;
// A jail supervisor asked to stop kills its VMM and cleans up in tens of milliseconds.
constexpr int kJailStopGraceMs = 3000;

std::string one_line(std::string s, size_t max = 200) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s.size() > max ? s.substr(0, max) + "..." : s;
}

}  // namespace

Result<std::unique_ptr<MicrovmInstance>> MicrovmInstance::launch(
    const std::vector<std::string>& vmm_argv, const VmPaths& paths, uint32_t cid,
    const std::optional<VmJail>& jail, bool paused, std::chrono::milliseconds timeout) {
  // A folder an earlier VM of the same name left (a crashed daemon's) goes first.
  TRY_STATUS(remove_tree(paths.dir));
  if (::mkdir(paths.dir.c_str(), 0700) != 0) return sys_error("create " + paths.dir);
  if (jail && ::chown(paths.dir.c_str(), jail->uid, jail->uid) != 0) {
    Error e = sys_error("chown " + paths.dir);
    (void)remove_tree(paths.dir);
    return e;
  }
  const std::vector<std::string> argv =
      jail ? jailed_argv(*jail, vmm_argv.front(), vmm_argv) : vmm_argv;
  auto process = VmmProcess::spawn(argv, paths.log);
  if (!process.ok()) {
    (void)remove_tree(paths.dir);
    return process.take_error();
  }
  std::unique_ptr<MicrovmInstance> vm(new MicrovmInstance(std::move(*process), paths, cid, jail));
  vm->paused_ = paused;
  vm->agent_.kind = AgentEndpoint::Kind::kVsockUds;
  vm->agent_.path = paths.vsock_uds;
  // The folder is the (jailed) VMM's: a link it planted there is never followed.
  vm->agent_.follow_socket_link = false;
  const auto deadline = Clock::now() + timeout;
  http::ClientOptions quick;
  quick.timeout = std::chrono::milliseconds(1000);
  quick.follow_socket_link = false;
  for (;;) {
    // The socket exists once the VM is restored and its API serves: one GET proves both.
    if (::access(paths.api_sock.c_str(), F_OK) == 0) {
      auto r = http::http_request(paths.api_sock, "GET", "/vm", {}, {}, quick);
      if (r.ok() && r->status == 200) return vm;
    }
    if (!vm->process_.alive()) {
      std::string why = "the VM ended before its control API answered: " + vm->exit_description() +
                        ": " + file_tail(paths.log);
      vm->destroy();
      return make_error(why);
    }
    if (Clock::now() >= deadline) {
      vm->destroy();
      return make_error("the VM's control API did not come up within " +
                        std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(kRetryPause);
  }
}

MicrovmInstance::~MicrovmInstance() {
  destroy();
}

void MicrovmInstance::destroy() {
  stop_vmm();
  (void)remove_tree(paths_.dir);
}

void MicrovmInstance::stop_vmm() {
  if (jail_) {
    // The supervisor kills the VMM and removes the jail folder and cgroups; after a supervisor
    // that did not stop in time (or was SIGKILLed), the same removal from here.
    process_.stop(kJailStopGraceMs);
    if (Status s = remove_jail_leftovers(jail_->chroot_base, jail_->id, jail_->id,
                                         JailLeftovers::kSupervisorGone);
        !s.ok())
      LOG_WARN("jail %s: %s", jail_->id.c_str(), s.error().describe().c_str());
  } else {
    process_.kill();
  }
}

Result<nlohmann::json> MicrovmInstance::control(const std::string& method,
                                                const std::string& target, const std::string& body,
                                                const std::string& what,
                                                std::chrono::milliseconds timeout) {
  http::ClientOptions options;
  options.timeout = timeout;
  options.follow_socket_link = false;
  auto r = http::http_request(paths_.api_sock, method, target, body, {}, options);
  if (!r.ok()) {
    if (!process_.alive()) return make_error(what + ": " + exit_description());
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
    if (!process_.alive()) return make_error("agent: " + exit_description());
    auto client = AgentClient::connect_vsock_uds(paths_.vsock_uds, agent::kAgentVsockPort,
                                                 handshake_ms, /*follow_socket_link=*/false);
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
    if (!applied.ok() && agent_error_code(applied.error()).empty()) {
      // The connection died without an answer (the guest took the vsock transport reset only
      // now): sent again on a new connection. Had the agent applied it, the retry's old token
      // would be refused (`unauthorized`) and the hand-out would fail, never hand out a VM
      // whose token is unknown.
      last = applied.error().describe();
      std::this_thread::sleep_for(kRetryPause);
      continue;
    }
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

Status MicrovmInstance::snapshot(const std::string& dir, bool resume_after) {
  nlohmann::json body{{"dir", dir}, {"resume", resume_after && !paused_}};
  TRY(control("PUT", "/snapshot/create", body.dump(), "snapshot", std::chrono::seconds(120)));
  if (!resume_after) paused_ = true;
  return {};
}

std::string MicrovmInstance::exit_description() {
  std::string d = process_.describe_exit();
  if (!jail_ || d.rfind("vmm exited with status ", 0) != 0) return d;
  // The jail supervisor exits with the VMM's status, 128+N when it was killed by signal N, and
  // logs an OOM kill by the memory cgroup.
  const int code = std::atoi(d.c_str() + 23);
  if (code > 128 && code < 128 + 65) {
    const char* abbrev = ::sigabbrev_np(code - 128);
    d = std::string("vmm killed by SIG") + (abbrev ? abbrev : std::to_string(code - 128).c_str());
    if (file_tail(paths_.log, 600).find("memory limit") != std::string::npos)
      d += " (memory limit)";
  }
  return d;
}

nlohmann::json MicrovmInstance::describe() const {
  // "files": everything this VM has on disk (its folder, and its jail's), for the daemon's crash
  // recovery (backend.h). The vsock device's "<vsock>_<port>" sockets are the host listeners'.
  nlohmann::json files = nlohmann::json::array({paths_.dir});
  nlohmann::json d{{"pid", process_.pid()},
                   {"folder", paths_.dir},
                   {"api_socket", paths_.api_sock},
                   {"vsock_socket", paths_.vsock_uds},
                   {"cid", cid_},
                   {"console", paths_.console},
                   {"log", paths_.log}};
  if (jail_) {
    d["jail"] = {{"id", jail_->id},
                 {"dir", jail_->dir()},
                 {"host_uid", jail_->uid},
                 {"cgroup", "carapace/" + jail_->id},
                 {"mem_limit_mib", jail_->mem_limit_mib},
                 {"pids_max", jail_->pids_max},
                 {"cpu_quota_pct", jail_->cpu_quota_pct}};
    files.push_back(jail_->dir());
    d["cgroups"] = nlohmann::json::array({jail_->id});
  }
  d["files"] = files;
  return d;
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
