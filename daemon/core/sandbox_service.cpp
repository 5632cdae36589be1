#include "daemon/core/sandbox_service.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstdio>
#include <utility>

#include "daemon/core/json_log.h"
#include "daemon/core/mounts.h"
#include "daemon/core/service_entries.h"

namespace carapace::service {

using nlohmann::json;
using std::chrono::system_clock;

namespace {

uint64_t elapsed_ms(std::chrono::steady_clock::time_point since) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now() - since)
                                   .count());
}

// The sandbox's time to live: at most the daemon's max_ttl_s.
ApiResult<uint64_t> check_ttl(uint64_t ttl, uint64_t max) {
  if (ttl < 1) return bad_request("timeout_s: must be a positive integer (seconds)");
  if (ttl > max)
    return bad_request("timeout_s: at most " + std::to_string(max) + " (the daemon's max_ttl_s)");
  return ttl;
}

}  // namespace

EnvList merge_env(const EnvList& base, const EnvList& top) {
  EnvList out;
  for (const auto& kv : base) {
    bool overridden = false;
    for (const auto& t : top)
      overridden = overridden || t.first == kv.first;
    if (!overridden) out.push_back(kv);
  }
  out.insert(out.end(), top.begin(), top.end());
  return out;
}

SandboxService::SandboxService(ServiceOptions options, StateStore store)
    : options_(std::move(options)), store_(std::move(store)) {}

Result<std::unique_ptr<SandboxService>> SandboxService::start(ServiceOptions options) {
  // A mount root that is not there would refuse every mount beneath it with a 500: say so now.
  for (size_t i = 0; i < options.config.mount_roots.size(); ++i) {
    const std::string& root = options.config.mount_roots[i];
    UniqueFd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid())
      return as_invalid_input(sys_error("config: mount_roots[" + std::to_string(i) + "]: " + root +
                                        " is not a folder"));
  }
  StateStore store = TRY(StateStore::open(options.state_dir));
  std::unique_ptr<SandboxService> s(new SandboxService(std::move(options), std::move(store)));
  s->recover();
  s->reaper_ = std::thread([p = s.get()] { p->background_loop(false); });
  s->health_ = std::thread([p = s.get()] { p->background_loop(true); });
  return s;
}

SandboxService::~SandboxService() {
  shutdown();
}

std::string SandboxService::new_id(const char* prefix) {
  unsigned char bytes[6];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  char hex[13];
  for (size_t i = 0; i < sizeof bytes; ++i)
    snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
  return std::string(prefix) + hex;
}

HealthView SandboxService::health() {
  HealthView h;
  h.version = options_.version;
  for (const auto& [iso, f] : options_.factories)
    h.isolations.push_back(iso);
  h.default_isolation = options_.default_isolation;
  h.kvm = options_.kvm;
  h.cpu_virtualization = options_.cpu_virtualization;
  h.jailed_vmms = jail_microvms(options_.config);
  std::lock_guard<std::mutex> lock(mu_);
  h.sandboxes = sandboxes_.size();
  h.templates = templates_.size();
  return h;
}

std::shared_ptr<SandboxService::SandboxEntry> SandboxService::find_sandbox(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sandboxes_.find(id);
  return it == sandboxes_.end() ? nullptr : it->second;
}

SandboxView SandboxService::describe_sandbox(SandboxEntry& s) {
  SandboxView v;
  v.id = s.id;
  v.template_id = s.tpl->id;
  v.isolation = s.tpl->spec.isolation;
  v.created_at = s.created_at;
  v.from_pool = s.from_pool;
  v.create_ms = s.create_ms;
  v.parent = s.parent;
  v.mounts = mount_views(s.mounts);
  {
    std::lock_guard<std::mutex> lock(mu_);
    v.expires_at = s.expires_at;
    v.timeout_s = s.ttl_s;
  }
  std::lock_guard<std::mutex> lock(s.mu);
  v.network = s.network;
  v.proxy = s.proxy_url;
  if (s.instance) {
    v.state = s.instance->paused() ? SandboxView::State::kPaused : SandboxView::State::kRunning;
    v.backend = s.instance->describe();
  } else {
    v.state = SandboxView::State::kDestroyed;
    v.backend = json::object();
  }
  return v;
}

json SandboxService::sandbox_record(SandboxEntry& s) {
  const int pid = s.instance->pid();
  system_clock::time_point expires_at;
  {
    std::lock_guard<std::mutex> lock(mu_);  // after s.mu where that is held: the one order
    expires_at = s.expires_at;
  }
  json record = {{"id", s.id},
                 {"template", s.tpl->id},
                 {"pid", pid},
                 {"pid_start", process_start_time(pid)},
                 {"expires_at", rfc3339(expires_at)},
                 {"backend", s.instance->describe()}};
  if (s.egress) {
    const int epid = s.egress->pid();
    record["egress"] = {{"pid", epid},
                        {"pid_start", process_start_time(epid)},
                        {"files", json::array({s.egress->spec().control_path})}};
  }
  return record;
}

void SandboxService::release_reservation(TemplateEntry* tpl, uint32_t count, uint64_t mem_mib) {
  std::lock_guard<std::mutex> lock(mu_);
  reserved_sandboxes_ -= count;
  reserved_mem_mib_ -= mem_mib;
  if (tpl) tpl->users -= count;
}

SandboxService::Reservation& SandboxService::Reservation::operator=(Reservation&& o) noexcept {
  if (this != &o) {
    give_back();
    svc_ = o.svc_;
    tpl_ = o.tpl_;
    count_ = o.count_;
    mem_each_ = o.mem_each_;
    o.count_ = 0;
  }
  return *this;
}

SandboxService::Reservation SandboxService::Reservation::take_one() {
  if (count_ == 0) return {};
  --count_;
  return Reservation(svc_, tpl_, 1, mem_each_);
}

void SandboxService::Reservation::give_back() {
  if (count_ == 0) return;
  svc_->release_reservation(tpl_, count_, uint64_t{count_} * mem_each_);
  count_ = 0;
}

ApiResult<SandboxService::Reservation> SandboxService::reserve_locked(TemplateEntry* tpl,
                                                                      uint32_t count) {
  const DaemonConfig& c = options_.config;
  const uint64_t mem = uint64_t{count} * tpl->spec.mem_mib;
  if (reserved_sandboxes_ + count > c.max_sandboxes)
    return over_limit("at most " + std::to_string(c.max_sandboxes) + " sandboxes (max_sandboxes)");
  if (reserved_mem_mib_ + mem > c.max_memory_mib)
    return over_limit("sandbox memory would pass max_memory_mib (" +
                      std::to_string(c.max_memory_mib) + " MiB; " +
                      std::to_string(reserved_mem_mib_) + " in use)");
  reserved_sandboxes_ += count;
  reserved_mem_mib_ += mem;
  tpl->users += count;
  return Reservation(this, tpl, count, tpl->spec.mem_mib);
}

ApiResult<SandboxView> SandboxService::create_sandbox(const SandboxRequest& req) {
  const uint64_t ttl = TRY(
      check_ttl(req.timeout_s.value_or(options_.config.default_ttl_s), options_.config.max_ttl_s));
  const std::string& tpl_id = req.template_id;
  std::shared_ptr<TemplateEntry> tpl;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return unavailable("the daemon is shutting down");
    auto it = templates_.find(tpl_id);
    if (it == templates_.end()) return not_found("no template " + tpl_id);
    tpl = it->second;
  }
  // Its own list replaces the template's; either is opened now, before anything is reserved.
  auto start = std::chrono::steady_clock::now();
  InstanceOptions opts;
  opts.ttl_s = ttl;
  opts.mounts =
      TRY(resolve_mounts(req.mounts.value_or(tpl->mounts), options_.config.mount_roots, "mounts"));
  Reservation slot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return unavailable("the daemon is shutting down");
    // Deleted while its mounts were opened (it had no users yet to stop that).
    auto it = templates_.find(tpl_id);
    if (it == templates_.end() || it->second != tpl) return not_found("no template " + tpl_id);
    slot = TRY(reserve_locked(tpl.get(), 1));  // the last step under the lock
  }

  bool from_pool = false;
  auto instance = tpl->backend->acquire(opts, &from_pool);
  if (!instance.ok()) {
    metrics_.count_failure("create");
    json_log("error", "sandbox create failed",
             {{"template", tpl->id}, {"error", instance.error().describe()}});
    return from_error(instance.error());
  }
  auto proto = std::make_shared<SandboxEntry>();
  proto->env = req.env;
  proto->mounts = std::move(opts.mounts);
  proto->network = req.network.value_or(tpl->network);
  proto->ttl_s = ttl;
  proto->from_pool = from_pool;
  proto->create_ms = elapsed_ms(start);
  (from_pool ? metrics_.create_from_pool : metrics_.create_restore)
      .observe_ms(static_cast<double>(proto->create_ms));
  return register_instance(tpl, std::move(*instance), std::move(proto), std::move(slot));
}

// The instance becomes a sandbox and keeps the slot, or is destroyed (and the slot given back)
// when its record cannot be written or the daemon is stopping.
ApiResult<SandboxView> SandboxService::register_instance(std::shared_ptr<TemplateEntry> tpl,
                                                         std::unique_ptr<Instance> instance,
                                                         std::shared_ptr<SandboxEntry> s,
                                                         Reservation slot) {
  s->tpl = tpl;
  s->created_at = system_clock::now();
  s->instance = std::move(instance);
  int pid = s->instance->pid();
  {
    std::lock_guard<std::mutex> lock(mu_);
    s->id = new_id("sb-");
    s->expires_at = s->created_at + std::chrono::seconds(s->ttl_s);
    s->deadline = Clock::now() + std::chrono::seconds(s->ttl_s);
  }
  // Its way out before anyone can use it: a sandbox that was asked for a policy never runs
  // without the proxy that applies it.
  const NetworkSpec network = std::exchange(s->network, NetworkSpec{});
  if (Status e = apply_network(*s, network); !e.ok()) {
    s->egress.reset();
    s->instance.reset();
    metrics_.count_failure("create");
    json_log("error", "sandbox egress failed", {{"id", s->id}, {"error", e.error().describe()}});
    if (e.error().kind == ErrorKind::kInvalidInput) return bad_request(e.error().describe());
    return internal("egress proxy: " + e.error().describe());
  }
  if (Status w = store_.write_sandbox(s->id, sandbox_record(*s)); !w.ok()) {
    // Without a record a crash would leak it: refuse rather than run it untracked.
    s->egress.reset();
    s->instance.reset();
    metrics_.count_failure("create");
    return internal(w.error().describe());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!shutting_down_) {
      sandboxes_[s->id] = s;
      slot.keep();  // destroy() gives it back
    } else {
      s->egress.reset();
      s->instance.reset();
    }
  }
  if (!s->instance) {
    (void)store_.remove_sandbox(s->id);
    return unavailable("the daemon is shutting down");
  }
  metrics_.sandboxes_created++;
  json_log("info", "sandbox created",
           {{"id", s->id},
            {"template", tpl->id},
            {"from_pool", s->from_pool},
            {"create_ms", s->create_ms},
            {"pid", pid},
            {"parent", s->parent}});
  return describe_sandbox(*s);
}

std::vector<SandboxView> SandboxService::list_sandboxes() {
  std::vector<std::shared_ptr<SandboxEntry>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, s] : sandboxes_)
      all.push_back(s);
  }
  std::vector<SandboxView> list;
  for (auto& s : all)
    list.push_back(describe_sandbox(*s));
  return list;
}

ApiResult<SandboxView> SandboxService::get_sandbox(const std::string& id) {
  auto s = find_sandbox(id);
  if (!s) return not_found("no sandbox " + id);
  return describe_sandbox(*s);
}

bool SandboxService::destroy(const std::string& id, const std::string& why,
                             const std::string& level) {
  std::shared_ptr<SandboxEntry> s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end()) return false;
    s = it->second;
    sandboxes_.erase(it);
    // Counted while still under the lock: once a sandbox is gone from the API, its count is
    // already visible in /metrics.
    if (why == "expired") {
      metrics_.sandboxes_expired++;
    } else if (why == "unresponsive" || why == "exited") {
      metrics_.count_failure(why);
    }
  }
  std::unique_ptr<Instance> instance;
  std::unique_ptr<EgressSidecar> egress;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    instance = std::move(s->instance);
    egress = std::move(s->egress);
  }
  egress.reset();  // its connections cut before the sandbox goes
  std::string exit_description;
  if (instance) {
    auto counters = instance->counters();
    if (auto c = counters.find("egress_dropped_packets"); c != counters.end())
      metrics_.egress_dropped_retired += c->second;
    if (!instance->alive()) exit_description = instance->exit_description();
    instance.reset();  // kills its processes and removes its files
  }
  (void)store_.remove_sandbox(id);
  release_reservation(s->tpl.get(), 1, s->tpl->spec.mem_mib);
  json fields = {{"id", id}, {"template", s->tpl->id}, {"reason", why}};
  if (!exit_description.empty()) fields["exit"] = exit_description;
  json_log(level, "sandbox destroyed", fields);
  return true;
}

ApiStatus SandboxService::delete_sandbox(const std::string& id) {
  if (!destroy(id, "deleted", "info")) return not_found("no sandbox " + id);
  return {};
}

ApiResult<SandboxView> SandboxService::pause_sandbox(const std::string& id) {
  return set_paused(id, true);
}

ApiResult<SandboxView> SandboxService::resume_sandbox(const std::string& id) {
  return set_paused(id, false);
}

// Pause or resume: 409 when it already is in that state, or when the back end says it cannot
// (invalid input from its point of view).
ApiResult<SandboxView> SandboxService::set_paused(const std::string& id, bool pause) {
  auto s = find_sandbox(id);
  if (!s) return not_found("no sandbox " + id);
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->instance) return not_found("no sandbox " + id);
    if (s->instance->paused() == pause)
      return conflict("sandbox " + id + (pause ? " is already paused" : " is not paused"));
    if (Status st = pause ? s->instance->pause() : s->instance->resume(); !st.ok()) {
      if (st.error().kind == ErrorKind::kInvalidInput) return conflict(st.error().describe());
      return internal(st.error().describe());
    }
  }
  json_log("info", pause ? "sandbox paused" : "sandbox resumed", {{"id", id}});
  return describe_sandbox(*s);
}

ApiResult<std::vector<SandboxView>> SandboxService::fork_sandbox(const std::string& id,
                                                                 const ForkRequest& req) {
  if (!kForkCountRange.contains(req.count)) return range_error("count", kForkCountRange);
  const uint32_t count = req.count;
  auto s = find_sandbox(id);
  if (!s) return not_found("no sandbox " + id);
  TemplateEntry* tpl = s->tpl.get();
  // The children's mounts (docs/security.md #67): none unless asked, the parent's read-only unless
  // "same", or a list of their own checked as a create's. Before anything is reserved.
  InstanceOptions opts;
  switch (req.mounts) {
    case ForkRequest::Mounts::kNone:
      break;
    case ForkRequest::Mounts::kInherit:  // s->mounts never changes once it is registered
      opts.mounts = inherited_mounts(s->mounts, req.keep_mount_modes);
      break;
    case ForkRequest::Mounts::kList:
      opts.mounts = TRY(resolve_mounts(req.mount_list, options_.config.mount_roots, "mounts"));
      break;
  }
  Reservation slots;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return unavailable("the daemon is shutting down");
    slots = TRY(reserve_locked(tpl, count));  // the last step under the lock
  }
  auto start = std::chrono::steady_clock::now();
  Result<std::vector<std::unique_ptr<Instance>>> children = make_error("not forked");
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->instance) return not_found("no sandbox " + id);
    if (s->instance->paused())
      return conflict("sandbox " + id + " is paused; fork needs a running sandbox");
    children = tpl->backend->fork(*s->instance, count, opts);
  }
  if (!children.ok()) {
    // A back end that cannot fork (process isolation) says so as invalid input: a state of
    // this sandbox's kind, not a malformed request.
    if (children.error().kind == ErrorKind::kInvalidInput)
      return conflict(children.error().describe());
    metrics_.count_failure("fork");
    return internal(children.error().describe());
  }
  uint64_t ms = elapsed_ms(start);
  // A back end that returned fewer children than asked: the rest of `slots` is given back when
  // it goes out of scope.
  uint64_t parent_ttl;
  {
    std::lock_guard<std::mutex> lock(mu_);
    parent_ttl = s->ttl_s;
  }
  NetworkSpec network;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    network = req.network.value_or(s->network);
    // Children get no secrets unless the fork request names them (docs/api.md, Credentials).
    if (!req.network) network.credentials.clear();
  }
  std::vector<SandboxView> list;
  for (auto& child : *children) {
    auto entry = std::make_shared<SandboxEntry>();
    entry->env = s->env;
    entry->network = network;
    entry->ttl_s = parent_ttl;
    entry->create_ms = ms;
    entry->parent = id;
    entry->mounts = opts.mounts;
    auto r = register_instance(s->tpl, std::move(child), std::move(entry), slots.take_one());
    if (r.ok()) list.push_back(std::move(*r));
  }
  if (list.empty()) return internal("no child could be registered");
  return list;
}

ApiResult<SandboxView> SandboxService::set_timeout(const std::string& id,
                                                   const TimeoutRequest& req) {
  const uint64_t ttl = TRY(check_ttl(req.timeout_s, options_.config.max_ttl_s));
  auto s = find_sandbox(id);
  if (!s) return not_found("no sandbox " + id);
  {
    std::lock_guard<std::mutex> lock(mu_);
    s->ttl_s = ttl;
    s->expires_at = system_clock::now() + std::chrono::seconds(ttl);
    s->deadline = Clock::now() + std::chrono::seconds(ttl);
  }
  return describe_sandbox(*s);
}

ApiResult<AgentTarget> SandboxService::agent_target(const std::string& id) {
  auto s = find_sandbox(id);
  if (!s) return not_found("no sandbox " + id);
  std::lock_guard<std::mutex> lock(s->mu);
  if (!s->instance) return not_found("no sandbox " + id);
  if (s->instance->paused()) return conflict("sandbox " + id + " is paused; resume it first");
  return AgentTarget{id, s->instance->agent(), s->env};
}

}  // namespace carapace::service
