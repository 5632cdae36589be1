// SandboxService: the core of `carapace serve` (docs/api.md), without HTTP: typed requests in,
// views and typed errors (ApiError) out; the routes (daemon/api) parse and render JSON. It keeps
// the registry of templates and sandboxes, hands out ids, enforces the daemon's limits, destroys
// sandboxes when their time to live runs out (reaper thread) or their agent stops answering (health
// thread), records what it runs in the state directory so a restart can clean up after a crash, and
// keeps the metrics. Back ends are made through injectable factories, so tests run the whole daemon
// over a fake back end.
//
// Locking: `mu_` guards the maps, reservations and expiry times; each sandbox's own `mu` guards
// its Instance (pause/resume/fork/destroy). Slow work (template builds, acquire, destroy, agent
// calls) runs with neither held, so one slow sandbox never stalls the API.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "carapace/version.h"
#include "daemon/backends/backend.h"
#include "daemon/core/api_result.h"
#include "daemon/core/daemon_config.h"
#include "daemon/core/service_metrics.h"
#include "daemon/core/service_requests.h"
#include "daemon/core/state_store.h"

namespace carapace::service {

using BackendFactory = std::function<Result<std::unique_ptr<TemplateBackend>>(
    const TemplateSpec&, const BackendContext&)>;

struct ServiceOptions {
  DaemonConfig config;
  std::string state_dir;
  // One per isolation this daemon offers; a template asking for another one is refused (400).
  std::map<Isolation, BackendFactory> factories;
  Isolation default_isolation = Isolation::kProcess;
  bool kvm = false;  // /dev/kvm opens and KVM_CREATE_VM works
  // "vmx", "svm" or "none" (/proc/cpuinfo): informational; without it KVM may be an emulating
  // module (such as PVM) on which a standard Linux guest boots very slowly.
  std::string cpu_virtualization = "none";
  std::string carapace_exe;
  std::string agent_exe;
  std::string version = CARAPACE_VERSION;
};

// A running sandbox's agent, for exec, files and documents.
struct AgentTarget {
  std::string sandbox_id;
  AgentEndpoint endpoint;
  std::vector<std::pair<std::string, std::string>> env;  // the sandbox's env
};

class SandboxService {
 public:
  // Opens the state dir, cleans up what a crashed run left, reloads templates and starts the
  // reaper and health threads.
  static Result<std::unique_ptr<SandboxService>> start(ServiceOptions options);
  ~SandboxService();
  SandboxService(const SandboxService&) = delete;
  SandboxService& operator=(const SandboxService&) = delete;

  // Destroys every sandbox; templates are shut down and, with on_shutdown "destroy", removed
  // (with "persist" their records stay for the next start). Idempotent.
  void shutdown();

  HealthView health();

  ApiResult<TemplateView> create_template(const TemplateRequest& request);
  std::vector<TemplateView> list_templates();
  ApiResult<TemplateView> get_template(const std::string& id);
  ApiStatus delete_template(const std::string& id);

  ApiResult<SandboxView> create_sandbox(const SandboxRequest& request);
  std::vector<SandboxView> list_sandboxes();
  ApiResult<SandboxView> get_sandbox(const std::string& id);
  ApiStatus delete_sandbox(const std::string& id);
  ApiResult<SandboxView> pause_sandbox(const std::string& id);
  ApiResult<SandboxView> resume_sandbox(const std::string& id);
  // The children, in the order the back end made them.
  ApiResult<std::vector<SandboxView>> fork_sandbox(const std::string& id,
                                                   const ForkRequest& request);
  ApiResult<SandboxView> set_timeout(const std::string& id, const TimeoutRequest& request);
  // PUT /sandboxes/{id}/network: the proxy's policy replaced live (connections the new policy
  // denies are cut), started, or stopped. 409 when the sandbox is paused.
  ApiResult<SandboxView> set_network(const std::string& id, const NetworkSpec& network);

  // 404 for an unknown sandbox, 409 when it is paused (its agent cannot answer).
  ApiResult<AgentTarget> agent_target(const std::string& id);

  std::string metrics_text();
  ServiceMetrics& metrics() { return metrics_; }
  const DaemonConfig& config() const { return options_.config; }

  // Runs one reaper pass / one health pass now (tests; the threads call them too).
  void reap_expired();
  void check_health();

 private:
  struct TemplateEntry;
  struct SandboxEntry;
  using Clock = std::chrono::steady_clock;

  SandboxService(ServiceOptions options, StateStore store);

  // A share of the daemon's limits (sandboxes, memory, the template's user count) held for
  // sandboxes being made: given back when it goes out of scope, unless keep() handed each slot
  // to a live sandbox (whose destroy() gives it back). Never destroyed with mu_ held.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(SandboxService* svc, TemplateEntry* tpl, uint32_t count, uint64_t mem_mib_each)
        : svc_(svc), tpl_(tpl), count_(count), mem_each_(mem_mib_each) {}
    Reservation(Reservation&& o) noexcept { *this = std::move(o); }
    Reservation& operator=(Reservation&& o) noexcept;
    ~Reservation() { give_back(); }
    // One slot out of this reservation into its own.
    Reservation take_one();
    void keep() { count_ = 0; }
    void give_back();

   private:
    SandboxService* svc_ = nullptr;
    TemplateEntry* tpl_ = nullptr;
    uint32_t count_ = 0;
    uint64_t mem_each_ = 0;
  };
  // With mu_ held: `count` sandboxes of `tpl` within max_sandboxes and max_memory_mib, or 429.
  ApiResult<Reservation> reserve_locked(TemplateEntry* tpl, uint32_t count);

  // service_templates.cpp
  ApiResult<std::shared_ptr<TemplateEntry>> build_template(const std::string& id,
                                                           const TemplateRequest& request,
                                                           bool reload);
  TemplateView describe_template(const TemplateEntry& t, uint32_t live);
  // service_lifecycle.cpp
  void recover();
  // sandbox_service.cpp
  // Takes over `slot`: kept when the instance becomes a sandbox, given back otherwise.
  ApiResult<SandboxView> register_instance(std::shared_ptr<TemplateEntry> tpl,
                                           std::unique_ptr<Instance> instance,
                                           std::shared_ptr<SandboxEntry> proto, Reservation slot);
  SandboxView describe_sandbox(SandboxEntry& s);
  // The sandbox's record in the state dir (its processes, for a restart after a crash).
  nlohmann::json sandbox_record(SandboxEntry& s);
  // service_egress.cpp. With s.mu held, or before s is registered: s's proxy started, given
  // `network`'s policy, or stopped, and its agent pointed at it; s.network is `network` after.
  Status apply_network(SandboxEntry& s, const NetworkSpec& network);
  ApiResult<SandboxView> set_paused(const std::string& id, bool pause);
  std::shared_ptr<SandboxEntry> find_sandbox(const std::string& id);
  // Removes `id` from the registry and destroys it; false when it was already gone. `why`
  // "expired" counts in sandboxes_expired, "unresponsive" and "exited" as failures.
  bool destroy(const std::string& id, const std::string& why, const std::string& level);
  void release_reservation(TemplateEntry* tpl, uint32_t count, uint64_t mem_mib);
  std::string new_id(const char* prefix);
  void background_loop(bool health);

  ServiceOptions options_;
  StateStore store_;
  ServiceMetrics metrics_;

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<TemplateEntry>> templates_;
  std::map<std::string, std::shared_ptr<SandboxEntry>> sandboxes_;
  uint32_t reserved_sandboxes_ = 0;  // live + being created + being destroyed
  uint64_t reserved_mem_mib_ = 0;
  bool shutting_down_ = false;

  std::mutex loop_mu_;
  std::condition_variable loop_cv_;
  bool stop_loops_ = false;
  std::thread reaper_;
  std::thread health_;
  std::once_flag shutdown_once_;
};

}  // namespace carapace::service
