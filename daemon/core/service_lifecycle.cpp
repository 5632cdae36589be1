// The service's life around the requests: recovery at start (what a crashed run left behind),
// the reaper (time to live) and health (silent agents) threads, metrics, and shutdown.
#include <dirent.h>
#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "daemon/core/json_log.h"
#include "daemon/core/record_fields.h"
#include "daemon/core/request_json.h"
#include "daemon/core/sandbox_service.h"
#include "daemon/core/service_entries.h"
#include "jailer/jail_fs.h"
#include "jailer/supervisor.h"

namespace carapace::service {

using nlohmann::json;

namespace {

// Only paths inside the state dir are ever removed on the word of a record.
bool inside(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() + 1 && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/' && path.find("/../") == std::string::npos &&
         path.find("/..", path.size() - 3) == std::string::npos;
}

// Everything in a template's folder but its record.
void clear_backend_files(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != ".." && name != "template.json") names.push_back(name);
  }
  ::closedir(d);
  for (const auto& n : names)
    (void)remove_tree(dir + "/" + n);
}

}  // namespace

void SandboxService::recover() {
  std::vector<std::string> errors;
  // Sandboxes first: their processes hold files under the templates' folders.
  for (const json& r : store_.read_sandboxes(&errors)) {
    const std::string id = string_field(r, "id");
    const uint64_t raw_pid = unsigned_field(r, "pid");
    const int pid = raw_pid <= INT32_MAX ? static_cast<int>(raw_pid) : 0;
    bool killed = kill_if_same_process(pid, unsigned_field(r, "pid_start"));
    // Its egress proxy (a child of the crashed daemon that outlived it only if the kernel had not
    // yet delivered the death signal), and the proxy's control socket.
    if (r.contains("egress") && r["egress"].is_object()) {
      const json& e = r["egress"];
      const uint64_t raw = unsigned_field(e, "pid");
      if (raw > 0 && raw <= INT32_MAX)
        (void)kill_if_same_process(static_cast<int>(raw), unsigned_field(e, "pid_start"));
      if (e.contains("files") && e["files"].is_array())
        for (const auto& f : e["files"])
          if (f.is_string() && inside(f.get<std::string>(), store_.dir()))
            (void)remove_tree(f.get<std::string>());
    }
    const json backend = r.contains("backend") && r["backend"].is_object() ? r["backend"] : json();
    // The jail's cgroups first: whatever still runs there (a VMM that outlived its supervisor)
    // is killed before its files go.
    json cgroups = json::array();
    if (backend.contains("cgroups") && backend["cgroups"].is_array()) {
      for (const auto& c : backend["cgroups"]) {
        if (!c.is_string()) continue;
        if (Status s = remove_stale_cgroups(c.get<std::string>()); s.ok())
          cgroups.push_back(c);
        else
          errors.push_back("sandbox " + id + ": " + s.error().describe());
      }
    }
    json removed = json::array();
    if (backend.contains("files") && backend["files"].is_array()) {
      for (const auto& f : backend["files"]) {
        if (!f.is_string() || !inside(f.get<std::string>(), store_.dir())) continue;
        if (remove_tree(f.get<std::string>()).ok()) removed.push_back(f);
      }
    }
    ::unlink(string_field(r, "record_path").c_str());
    json_log(
        "warn", "sandbox left by a previous run cleaned up",
        {{"id", id}, {"pid", pid}, {"killed", killed}, {"cgroups", cgroups}, {"removed", removed}});
  }
  for (const json& r : store_.read_templates(&errors)) {
    std::string id = string_field(r, "id");
    if (!r.contains("request") || !r["request"].is_object()) {
      errors.push_back("template " + id + ": record has no request");
      continue;
    }
    auto request = parse_template_request(r["request"]);
    if (!request.ok()) {
      json_log("error", "template could not be reloaded",
               {{"id", id}, {"error", request.error().message}});
      continue;
    }
    // The back end may reuse what it left in its folder (a snapshot); if that fails, it gets a
    // clean folder and builds from scratch.
    auto t = build_template(id, *request, true);
    if (!t.ok() && t.error().code == http::ErrorCode::kInternal) {
      json_log("warn", "template reload failed; rebuilding from scratch",
               {{"id", id}, {"error", t.error().message}});
      clear_backend_files(store_.template_dir(id));
      t = build_template(id, *request, true);
    }
    if (!t.ok()) {
      // Kept on disk: a later start may succeed (e.g. /dev/kvm back).
      json_log("error", "template could not be reloaded",
               {{"id", id}, {"error", t.error().message}});
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    templates_[id] = *t;
    json_log("info", "template reloaded", {{"id", id}, {"build_ms", (*t)->build_ms}});
  }
  for (const auto& e : errors)
    json_log("warn", "state dir", {{"error", e}});
}

void SandboxService::background_loop(bool health) {
  using namespace std::chrono;
  auto interval =
      health ? duration_cast<milliseconds>(duration<double>(options_.config.health_interval_s))
             : milliseconds(100);
  if (health && interval.count() == 0) return;  // health checks off
  std::unique_lock<std::mutex> lock(loop_mu_);
  while (!stop_loops_) {
    loop_cv_.wait_for(lock, interval, [this] { return stop_loops_; });
    if (stop_loops_) break;
    lock.unlock();
    if (health) {
      check_health();
    } else {
      reap_expired();
    }
    lock.lock();
  }
}

void SandboxService::reap_expired() {
  std::vector<std::string> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = Clock::now();
    for (const auto& [id, s] : sandboxes_) {
      if (s->deadline <= now) expired.push_back(id);
    }
  }
  for (const auto& id : expired) {
    destroy(id, "expired", "info");
  }
}

void SandboxService::check_health() {
  std::vector<std::shared_ptr<SandboxEntry>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, s] : sandboxes_)
      all.push_back(s);
  }
  int timeout_ms = static_cast<int>(options_.config.health_timeout_s * 1000);
  for (auto& s : all) {
    AgentEndpoint endpoint;
    bool exited = false;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      if (!s->instance || s->instance->paused()) continue;  // a paused guest cannot answer
      exited = !s->instance->alive();
      endpoint = s->instance->agent();
    }
    std::string reason;
    if (exited) {
      reason = "exited";
    } else {
      auto client = endpoint.connect();
      if (client.ok()) {
        client->set_io_timeout_ms(timeout_ms);
        if (client->ping().ok()) continue;
      }
      // Paused while the ping was out: not the agent's fault. Dying meanwhile (its sockets close
      // a moment before it can be reaped): say so.
      bool skip = false;
      for (int i = 0; i < 10 && !skip && reason.empty(); ++i) {
        std::lock_guard<std::mutex> lock(s->mu);
        if (!s->instance || s->instance->paused()) {
          skip = true;
        } else if (!s->instance->alive()) {
          reason = "exited";
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
      if (skip) continue;
      if (reason.empty()) reason = "unresponsive";
    }
    destroy(s->id, reason, "warn");
  }
}

std::string SandboxService::metrics_text() {
  std::vector<std::shared_ptr<TemplateEntry>> templates;
  std::vector<std::shared_ptr<SandboxEntry>> sandboxes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, t] : templates_)
      templates.push_back(t);
    for (const auto& [id, s] : sandboxes_)
      sandboxes.push_back(s);
  }
  RegistrySnapshot snap;
  snap.templates = templates.size();
  snap.sandboxes = sandboxes.size();
  for (const auto& t : templates) {
    PoolStats p = t->backend->pool_stats();
    snap.pools.push_back({t->id, p.ready, p.hits, p.misses});
  }
  for (const auto& s : sandboxes) {
    std::map<std::string, uint64_t> counters;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      if (!s->instance) continue;
      counters = s->instance->counters();
      if (s->egress) snap.egress[s->id] = s->egress->counters();
    }
    for (const auto& [name, value] : counters) {
      snap.devices.push_back({s->id, name, value});
      if (name == "egress_dropped_packets") snap.egress_dropped_live += value;
    }
  }
  return render_metrics(metrics_, snap);
}

void SandboxService::shutdown() {
  std::call_once(shutdown_once_, [this] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutting_down_ = true;
    }
    {
      std::lock_guard<std::mutex> lock(loop_mu_);
      stop_loops_ = true;
    }
    loop_cv_.notify_all();
    if (reaper_.joinable()) reaper_.join();
    if (health_.joinable()) health_.join();
    std::vector<std::string> ids;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [id, s] : sandboxes_)
        ids.push_back(id);
    }
    for (const auto& id : ids)
      destroy(id, "shutdown", "info");
    std::map<std::string, std::shared_ptr<TemplateEntry>> templates;
    {
      std::lock_guard<std::mutex> lock(mu_);
      templates.swap(templates_);
    }
    bool keep = options_.config.on_shutdown == OnShutdown::kPersist;
    for (auto& [id, t] : templates) {
      t->backend->shutdown();
      if (!keep) (void)store_.remove_template(id);
    }
    json_log("info", "service stopped",
             {{"sandboxes_destroyed", ids.size()},
              {"templates", templates.size()},
              {"templates_kept", keep}});
  });
}

}  // namespace carapace::service
