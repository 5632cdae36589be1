// Templates: POST/GET/DELETE /templates (docs/api.md). A template's request is checked here before
// a back end sees it (absolute paths to regular files, ranges), built by the back end's factory
// in the template's own folder under the state dir, and recorded there for the next start.
#include <sys/stat.h>

#include <cstring>

#include "daemon/core/json_log.h"
#include "daemon/core/sandbox_service.h"
#include "daemon/core/service_entries.h"

namespace carapace::service {

using nlohmann::json;

namespace {

constexpr size_t kMaxTemplates = 256;

ApiStatus check_file(const json& body, const char* field, bool required, std::string* out) {
  if (!body.contains(field) || body[field].is_null()) {
    if (required) return bad_request(std::string(field) + ": required");
    return {};
  }
  if (!body[field].is_string()) return bad_request(std::string(field) + ": must be a string");
  std::string path = body[field].get<std::string>();
  if (path.empty() || path[0] != '/' || path.size() > 4096)
    return bad_request(std::string(field) + ": must be an absolute path");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return bad_request(std::string(field) + ": " + path + " is not a readable regular file");
  *out = path;
  return {};
}

ApiStatus get_u32(const json& body, const char* field, uint32_t lo, uint32_t hi, uint32_t* out) {
  if (!body.contains(field)) return {};
  const json& v = body[field];
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    return bad_request(std::string(field) + ": must be an integer from " + std::to_string(lo) +
                       " to " + std::to_string(hi));
  *out = v.get<uint32_t>();
  return {};
}

bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

}  // namespace

// The request as a TemplateSpec, or the 400 that names the first bad field.
static ApiResult<TemplateSpec> parse_template_spec(const json& body, Isolation default_isolation) {
  static const char* kFields[] = {"name",      "isolation",       "kernel", "initrd",
                                  "rootfs",    "boot_args",       "vcpus",  "mem_mib",
                                  "pool_size", "agent_timeout_s", "network"};
  for (const auto& [k, v] : body.items()) {
    bool known = false;
    for (const char* f : kFields)
      known = known || k == f;
    if (!known) return bad_request(k + ": unknown field");
  }
  TemplateSpec spec;
  spec.isolation = default_isolation;
  if (body.contains("isolation")) {
    if (body["isolation"] == "microvm") {
      spec.isolation = Isolation::kMicrovm;
    } else if (body["isolation"] == "process") {
      spec.isolation = Isolation::kProcess;
    } else {
      return bad_request("isolation: must be \"microvm\" or \"process\"");
    }
  }
  bool vm = spec.isolation == Isolation::kMicrovm;
  if (auto s = check_file(body, "kernel", vm, &spec.kernel); !s) return s.error();
  if (auto s = check_file(body, "initrd", false, &spec.initrd); !s) return s.error();
  if (auto s = check_file(body, "rootfs", !vm, &spec.rootfs); !s) return s.error();
  if (body.contains("boot_args")) {
    if (!body["boot_args"].is_string() || body["boot_args"].get<std::string>().size() > 2048)
      return bad_request("boot_args: must be a string of at most 2048 characters");
    spec.boot_args = body["boot_args"].get<std::string>();
    if (spec.boot_args.find_first_of(std::string("\n\r\0", 3)) != std::string::npos)
      return bad_request("boot_args: must be one line");
  }
  if (auto s = get_u32(body, "vcpus", 1, 32, &spec.vcpus); !s) return s.error();
  if (auto s = get_u32(body, "mem_mib", 16, 65536, &spec.mem_mib); !s) return s.error();
  if (auto s = get_u32(body, "pool_size", 0, 64, &spec.pool_size); !s) return s.error();
  if (auto s = get_u32(body, "agent_timeout_s", 1, 3600, &spec.agent_timeout_s); !s)
    return s.error();
  if (body.contains("network")) {
    if (!body["network"].is_boolean()) return bad_request("network: must be true or false");
    spec.network = body["network"].get<bool>();
  }
  return spec;
}

ApiResult<std::shared_ptr<SandboxService::TemplateEntry>> SandboxService::build_template(
    const std::string& id, const json& request, bool reload) {
  auto spec = parse_template_spec(request, options_.default_isolation);
  if (!spec) return spec.error();
  auto factory = options_.factories.find(spec->isolation);
  if (factory == options_.factories.end())
    return bad_request(std::string("isolation: ") + isolation_name(spec->isolation) +
                       " is not available on this host");
  // The type first: request.value() throws on a name that is not a string.
  if (request.contains("name") && !request["name"].is_string())
    return bad_request("name: must be a string");
  std::string name = request.value("name", id);
  if (!valid_name(name))
    return bad_request("name: 1-64 characters of letters, digits, '-', '_' and '.'");
  std::string dir = store_.template_dir(id);
  if (::mkdir(dir.c_str(), 0700) != 0 && !(reload && errno == EEXIST))
    return internal("cannot create " + dir + ": " + strerror(errno));
  BackendContext ctx;
  ctx.template_id = id;
  ctx.dir = dir;
  ctx.carapace_exe = options_.carapace_exe;
  ctx.agent_exe = options_.agent_exe;
  ctx.seccomp = options_.config.seccomp;
  ctx.jail = jail_microvms(options_.config);
  ctx.vm_start_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(options_.config.vm_start_timeout_s * 1000));
  ctx.hand_out_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(options_.config.hand_out_timeout_s * 1000));

  auto start = std::chrono::steady_clock::now();
  auto backend = factory->second(*spec, ctx);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  start)
                .count();
  if (!backend.ok()) {
    if (!reload) (void)store_.remove_template(id);
    return from_error(backend.error());
  }
  auto t = std::make_shared<TemplateEntry>();
  t->id = id;
  t->name = name;
  t->spec = *spec;
  t->request = request;
  t->backend = std::move(*backend);
  t->build_ms = static_cast<uint64_t>(ms);
  t->created_at = std::chrono::system_clock::now();
  metrics_.template_build.observe_ms(static_cast<double>(ms));
  return t;
}

json SandboxService::describe_template(const TemplateEntry& t, uint32_t live) {
  PoolStats pool = t.backend->pool_stats();
  return {{"id", t.id},
          {"name", t.name},
          {"isolation", isolation_name(t.spec.isolation)},
          {"kernel", t.spec.kernel},
          {"rootfs", t.spec.rootfs},
          {"vcpus", t.spec.vcpus},
          {"mem_mib", t.spec.mem_mib},
          {"pool",
           {{"size", t.spec.pool_size},
            {"ready", pool.ready},
            {"hits", pool.hits},
            {"misses", pool.misses},
            {"refill_failures", pool.refill_failures}}},
          {"build_ms", t.build_ms},
          {"created_at", rfc3339(t.created_at)},
          {"sandboxes", live},
          {"backend", t.backend->describe()}};
}

ApiResult<json> SandboxService::create_template(const json& body) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return unavailable("the daemon is shutting down");
    if (templates_.size() >= kMaxTemplates)
      return over_limit("at most " + std::to_string(kMaxTemplates) + " templates");
  }
  std::string id = new_id("tpl-");
  auto t = build_template(id, body, false);
  if (!t.ok()) {
    json_log("warn", "template build failed", {{"id", id}, {"error", t.error().message}});
    return t.error();
  }
  std::shared_ptr<TemplateEntry> entry = *t;
  json record = {{"id", id},
                 {"request", body},
                 {"created_at", rfc3339(entry->created_at)},
                 {"build_ms", entry->build_ms}};
  if (Status w = store_.write_template(id, record); !w.ok()) {
    entry->backend->shutdown();
    (void)store_.remove_template(id);
    return internal(w.error().describe());
  }
  bool accepted = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!shutting_down_) templates_[id] = entry;
    accepted = !shutting_down_;
  }
  if (!accepted) {
    entry->backend->shutdown();
    (void)store_.remove_template(id);
    return unavailable("the daemon is shutting down");
  }
  json_log("info", "template built",
           {{"id", id},
            {"name", entry->name},
            {"isolation", isolation_name(entry->spec.isolation)},
            {"build_ms", entry->build_ms}});
  return describe_template(*entry, 0);
}

json SandboxService::list_templates() {
  std::vector<std::pair<std::shared_ptr<TemplateEntry>, uint32_t>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, t] : templates_)
      all.emplace_back(t, t->users);
  }
  json list = json::array();
  for (auto& [t, users] : all)
    list.push_back(describe_template(*t, users));
  return {{"templates", list}};
}

ApiResult<json> SandboxService::get_template(const std::string& id) {
  std::shared_ptr<TemplateEntry> t;
  uint32_t users = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = templates_.find(id);
    if (it == templates_.end()) return not_found("no template " + id);
    t = it->second;
    users = t->users;
  }
  return describe_template(*t, users);
}

ApiStatus SandboxService::delete_template(const std::string& id) {
  std::shared_ptr<TemplateEntry> t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = templates_.find(id);
    if (it == templates_.end()) return not_found("no template " + id);
    if (it->second->users > 0)
      return conflict("template " + id + " still has " + std::to_string(it->second->users) +
                      " sandboxes; delete them first");
    t = it->second;
    templates_.erase(it);
  }
  t->backend->shutdown();
  (void)store_.remove_template(id);
  json_log("info", "template deleted", {{"id", id}});
  return {};
}

}  // namespace carapace::service
