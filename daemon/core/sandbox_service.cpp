#include "daemon/core/sandbox_service.h"

#include <sys/random.h>

#include <cstdio>

#include "daemon/core/json_log.h"
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

ApiResult<uint64_t> get_ttl(const json& body, uint64_t def, uint64_t max) {
  if (!body.contains("timeout_s")) return def;
  const json& v = body["timeout_s"];
  if (!v.is_number_integer() || v.get<int64_t>() < 1)
    return bad_request("timeout_s: must be a positive integer (seconds)");
  uint64_t ttl = v.get<uint64_t>();
  if (ttl > max)
    return bad_request("timeout_s: at most " + std::to_string(max) + " (the daemon's max_ttl_s)");
  return ttl;
}

ApiResult<std::vector<std::string>> parse_network(const json& body) {
  std::vector<std::string> allow;
  if (!body.contains("network") || body["network"].is_null()) return allow;
  const json& n = body["network"];
  if (!n.is_object()) return bad_request("network: must be an object {\"allow\": [...]}");
  for (const auto& [k, v] : n.items()) {
    if (k != "allow") return bad_request("network." + k + ": unknown field");
    if (!v.is_array()) return bad_request("network.allow: must be an array of strings");
    if (v.size() > 256) return bad_request("network.allow: at most 256 entries");
    for (const auto& e : v) {
      // CIDR:proto:port; the back end applies it, here only the shape is checked.
      if (!e.is_string()) return bad_request("network.allow: entries must be strings");
      std::string s = e.get<std::string>();
      size_t c1 = s.find(':');
      size_t c2 = c1 == std::string::npos ? c1 : s.find(':', c1 + 1);
      std::string proto = c2 == std::string::npos ? "" : s.substr(c1 + 1, c2 - c1 - 1);
      if (s.size() > 64 || c2 == std::string::npos || s.find('/') > c1 ||
          (proto != "tcp" && proto != "udp") || s.size() == c2 + 1)
        return bad_request("network.allow: '" + s + "' is not CIDR:tcp|udp:port");
      allow.push_back(s);
    }
  }
  return allow;
}

}  // namespace

ApiResult<std::vector<std::pair<std::string, std::string>>> parse_env(const json& v,
                                                                      const std::string& field) {
  std::vector<std::pair<std::string, std::string>> env;
  if (v.is_null()) return env;
  if (!v.is_object()) return bad_request(field + ": must be an object of strings");
  if (v.size() > 1024) return bad_request(field + ": at most 1024 variables");
  for (const auto& [k, val] : v.items()) {
    if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos)
      return bad_request(field + ": '" + k + "' is not a variable name");
    if (!val.is_string()) return bad_request(field + "." + k + ": must be a string");
    std::string s = val.get<std::string>();
    if (s.find('\0') != std::string::npos) return bad_request(field + "." + k + ": holds NUL");
    env.emplace_back(k, s);
  }
  return env;
}

std::vector<std::pair<std::string, std::string>> merge_env(
    const std::vector<std::pair<std::string, std::string>>& base,
    const std::vector<std::pair<std::string, std::string>>& top) {
  std::vector<std::pair<std::string, std::string>> out;
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

json SandboxService::health() {
  json isolations = json::array();
  for (const auto& [iso, f] : options_.factories)
    isolations.push_back(isolation_name(iso));
  std::lock_guard<std::mutex> lock(mu_);
  return {{"version", options_.version},
          {"isolation", isolations},
          {"default_isolation", isolation_name(options_.default_isolation)},
          {"kvm", options_.kvm},
          {"cpu_virtualization", options_.cpu_virtualization},
          {"jailed_vmms", jail_microvms(options_.config)},
          {"sandboxes", sandboxes_.size()},
          {"templates", templates_.size()}};
}

std::shared_ptr<SandboxService::SandboxEntry> SandboxService::find_sandbox(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sandboxes_.find(id);
  return it == sandboxes_.end() ? nullptr : it->second;
}

json SandboxService::describe_sandbox(SandboxEntry& s) {
  system_clock::time_point expires;
  uint64_t ttl_s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    expires = s.expires_at;
    ttl_s = s.ttl_s;
  }
  json j = {{"id", s.id},
            {"template", s.tpl->id},
            {"isolation", isolation_name(s.tpl->spec.isolation)},
            {"created_at", rfc3339(s.created_at)},
            {"expires_at", rfc3339(expires)},
            {"timeout_s", ttl_s},
            {"from_pool", s.from_pool},
            {"create_ms", s.create_ms},
            {"parent", s.parent.empty() ? json(nullptr) : json(s.parent)}};
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.instance) {
    j["state"] = s.instance->paused() ? "paused" : "running";
    j["backend"] = s.instance->describe();
  } else {
    j["state"] = "destroyed";
    j["backend"] = json::object();
  }
  return j;
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

ApiResult<json> SandboxService::create_sandbox(const json& body) {
  for (const auto& [k, v] : body.items()) {
    if (k != "template" && k != "timeout_s" && k != "env" && k != "network")
      return bad_request(k + ": unknown field");
  }
  if (!body.contains("template") || !body["template"].is_string())
    return bad_request("template: required (a template id)");
  std::string tpl_id = body["template"].get<std::string>();
  auto ttl = get_ttl(body, options_.config.default_ttl_s, options_.config.max_ttl_s);
  if (!ttl) return ttl.error();
  auto env = parse_env(body.value("env", json()), "env");
  if (!env) return env.error();
  auto allow = parse_network(body);
  if (!allow) return allow.error();

  std::shared_ptr<TemplateEntry> tpl;
  Reservation slot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return unavailable("the daemon is shutting down");
    auto it = templates_.find(tpl_id);
    if (it == templates_.end()) return not_found("no template " + tpl_id);
    tpl = it->second;
    slot = TRY(reserve_locked(tpl.get(), 1));  // the last step under the lock
  }

  auto start = std::chrono::steady_clock::now();
  InstanceOptions opts;
  opts.egress_allow = *allow;
  opts.ttl_s = *ttl;
  bool from_pool = false;
  auto instance = tpl->backend->acquire(opts, &from_pool);
  if (!instance.ok()) {
    metrics_.count_failure("create");
    json_log("error", "sandbox create failed",
             {{"template", tpl->id}, {"error", instance.error().describe()}});
    return from_error(instance.error());
  }
  auto proto = std::make_shared<SandboxEntry>();
  proto->env = std::move(*env);
  proto->egress_allow = std::move(*allow);
  proto->ttl_s = *ttl;
  proto->from_pool = from_pool;
  proto->create_ms = elapsed_ms(start);
  (from_pool ? metrics_.create_from_pool : metrics_.create_restore)
      .observe_ms(static_cast<double>(proto->create_ms));
  return register_instance(tpl, std::move(*instance), std::move(proto), std::move(slot));
}

// The instance becomes a sandbox and keeps the slot, or is destroyed (and the slot given back)
// when its record cannot be written or the daemon is stopping.
ApiResult<json> SandboxService::register_instance(std::shared_ptr<TemplateEntry> tpl,
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
  json record = {{"id", s->id},
                 {"template", tpl->id},
                 {"pid", pid},
                 {"pid_start", process_start_time(pid)},
                 {"expires_at", rfc3339(s->expires_at)},
                 {"backend", s->instance->describe()}};
  if (Status w = store_.write_sandbox(s->id, record); !w.ok()) {
    // Without a record a crash would leak it: refuse rather than run it untracked.
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

json SandboxService::list_sandboxes() {
  std::vector<std::shared_ptr<SandboxEntry>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, s] : sandboxes_)
      all.push_back(s);
  }
  json list = json::array();
  for (auto& s : all)
    list.push_back(describe_sandbox(*s));
  return {{"sandboxes", list}};
}

ApiResult<json> SandboxService::get_sandbox(const std::string& id) {
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
  {
    std::lock_guard<std::mutex> lock(s->mu);
    instance = std::move(s->instance);
  }
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

ApiResult<json> SandboxService::pause_sandbox(const std::string& id) {
  auto s = find_sandbox(id);
  if (!s) return not_found("no sandbox " + id);
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->instance) return not_found("no sandbox " + id);
    if (s->instance->paused()) return conflict("sandbox " + id + " is already paused");
    if (Status st = s->instance->pause(); !st.ok()) {
      if (st.error().kind == ErrorKind::kInvalidInput) return conflict(st.error().describe());
      return internal(st.error().describe());
    }
  }
  json_log("info", "sandbox paused", {{"id", id}});
  return describe_sandbox(*s);
}

ApiResult<json> SandboxService::resume_sandbox(const std::string& id) {
  auto s = find_sandbox(id);
  if (!s) return not_found("no sandbox " + id);
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->instance) return not_found("no sandbox " + id);
    if (!s->instance->paused()) return conflict("sandbox " + id + " is not paused");
    if (Status st = s->instance->resume(); !st.ok()) {
      if (st.error().kind == ErrorKind::kInvalidInput) return conflict(st.error().describe());
      return internal(st.error().describe());
    }
  }
  json_log("info", "sandbox resumed", {{"id", id}});
  return describe_sandbox(*s);
}

ApiResult<json> SandboxService::fork_sandbox(const std::string& id, const json& body) {
  for (const auto& [k, v] : body.items()) {
    if (k != "count") return bad_request(k + ": unknown field");
  }
  uint32_t count = 1;
  if (body.contains("count")) {
    const json& c = body["count"];
    if (!c.is_number_integer() || c.get<int64_t>() < 1 || c.get<int64_t>() > 16)
      return bad_request("count: must be an integer from 1 to 16");
    count = c.get<uint32_t>();
  }
  auto s = find_sandbox(id);
  if (!s) return not_found("no sandbox " + id);
  TemplateEntry* tpl = s->tpl.get();
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
    children = tpl->backend->fork(*s->instance, count);
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
  json list = json::array();
  for (auto& child : *children) {
    auto entry = std::make_shared<SandboxEntry>();
    entry->env = s->env;
    entry->egress_allow = s->egress_allow;
    entry->ttl_s = parent_ttl;
    entry->create_ms = ms;
    entry->parent = id;
    auto r = register_instance(s->tpl, std::move(child), std::move(entry), slots.take_one());
    if (r.ok()) list.push_back(std::move(*r));
  }
  if (list.empty()) return internal("no child could be registered");
  return json{{"children", list}};
}

ApiResult<json> SandboxService::set_timeout(const std::string& id, const json& body) {
  for (const auto& [k, v] : body.items()) {
    if (k != "timeout_s") return bad_request(k + ": unknown field");
  }
  if (!body.contains("timeout_s")) return bad_request("timeout_s: required");
  auto ttl = get_ttl(body, 0, options_.config.max_ttl_s);
  if (!ttl) return ttl.error();
  auto s = find_sandbox(id);
  if (!s) return not_found("no sandbox " + id);
  {
    std::lock_guard<std::mutex> lock(mu_);
    s->ttl_s = *ttl;
    s->expires_at = system_clock::now() + std::chrono::seconds(*ttl);
    s->deadline = Clock::now() + std::chrono::seconds(*ttl);
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
