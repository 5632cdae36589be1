// Templates: POST/GET/DELETE /templates (docs/api.md). A template's request is checked here before
// a back end sees it (absolute paths to regular files, ranges, one-line boot arguments), built by
// the back end's factory in the template's own folder under the state dir, and recorded there for
// the next start.
#include <sys/stat.h>

#include <cstring>

#include "daemon/core/json_log.h"
#include "daemon/core/mounts.h"
#include "daemon/core/request_json.h"
#include "daemon/core/sandbox_service.h"
#include "daemon/core/service_entries.h"

namespace carapace::service {

using nlohmann::json;

namespace {

constexpr size_t kMaxTemplates = 256;

// A file the back end will read: an absolute path to a regular file.
ApiStatus check_file(const char* field, const std::string& path, bool required) {
  if (path.empty() && !required) return {};
  if (path.empty() && required) return bad_request(std::string(field) + ": required");
  if (path[0] != '/' || path.size() > kMaxPath)
    return bad_request(std::string(field) + ": must be an absolute path");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return bad_request(std::string(field) + ": " + path + " is not a readable regular file");
  return {};
}

ApiStatus check_range(const char* field, uint32_t value, FieldRange range) {
  if (!range.contains(value)) return range_error(field, range);
  return {};
}

bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// What a back end may be given, whoever made the request: the files exist, the numbers are in
// the API's ranges, the boot arguments are one line.
ApiStatus check_spec(const TemplateSpec& spec) {
  bool vm = spec.isolation == Isolation::kMicrovm;
  TRY_STATUS(check_file("kernel", spec.kernel, vm));
  TRY_STATUS(check_file("initrd", spec.initrd, false));
  TRY_STATUS(check_file("rootfs", spec.rootfs, !vm));
  if (spec.boot_args.size() > kMaxBootArgs)
    return bad_request("boot_args: must be a string of at most " + std::to_string(kMaxBootArgs) +
                       " characters");
  if (spec.boot_args.find_first_of(std::string("\n\r\0", 3)) != std::string::npos)
    return bad_request("boot_args: must be one line");
  TRY_STATUS(check_range("vcpus", spec.vcpus, kVcpusRange));
  TRY_STATUS(check_range("mem_mib", spec.mem_mib, kMemMibRange));
  TRY_STATUS(check_range("pool_size", spec.pool_size, kPoolSizeRange));
  TRY_STATUS(check_range("agent_timeout_s", spec.agent_timeout_s, kAgentTimeoutRange));
  return {};
}

}  // namespace

ApiResult<std::shared_ptr<SandboxService::TemplateEntry>> SandboxService::build_template(
    const std::string& id, const TemplateRequest& request, bool reload) {
  TemplateSpec spec = request.spec;
  spec.isolation = request.isolation.value_or(options_.default_isolation);
  TRY_STATUS(check_spec(spec));
  auto factory = options_.factories.find(spec.isolation);
  if (factory == options_.factories.end())
    return bad_request(std::string("isolation: ") + isolation_name(spec.isolation) +
                       " is not available on this host");
  std::string name = request.name.value_or(id);
  if (!valid_name(name))
    return bad_request("name: 1-64 characters of letters, digits, '-', '_' and '.'");
  // The default mounts are opened once now, so a template that names a folder it could never
  // mount is refused; each create opens them again. A reload only checks the list: a folder gone
  // meanwhile fails the creates that use it, not the template.
  TRY_STATUS(check_mount_requests(request.mounts, "mounts"));
  if (!reload) (void)TRY(resolve_mounts(request.mounts, options_.config.mount_roots, "mounts"));
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
  auto backend = factory->second(spec, ctx);
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
  t->spec = spec;
  t->network = request.network;
  t->mounts = request.mounts;
  t->backend = std::move(*backend);
  t->build_ms = static_cast<uint64_t>(ms);
  t->created_at = std::chrono::system_clock::now();
  metrics_.template_build.observe_ms(static_cast<double>(ms));
  return t;
}

TemplateView SandboxService::describe_template(const TemplateEntry& t, uint32_t live) {
  return {t.id,       t.name,
          t.spec,     t.network,
          t.mounts,   t.backend->pool_stats(),
          t.build_ms, t.created_at,
          live,       t.backend->describe()};
}

ApiResult<TemplateView> SandboxService::create_template(const TemplateRequest& request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return unavailable("the daemon is shutting down");
    if (templates_.size() >= kMaxTemplates)
      return over_limit("at most " + std::to_string(kMaxTemplates) + " templates");
  }
  std::string id = new_id("tpl-");
  auto t = build_template(id, request, false);
  if (!t.ok()) {
    json_log("warn", "template build failed", {{"id", id}, {"error", t.error().message}});
    return t.error();
  }
  std::shared_ptr<TemplateEntry> entry = *t;
  // With the isolation it got: a restart with another default must not change what it is.
  TemplateRequest recorded = request;
  recorded.isolation = entry->spec.isolation;
  json record = {{"id", id},
                 {"request", template_request_json(recorded)},
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

std::vector<TemplateView> SandboxService::list_templates() {
  std::vector<std::pair<std::shared_ptr<TemplateEntry>, uint32_t>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, t] : templates_)
      all.emplace_back(t, t->users);
  }
  std::vector<TemplateView> list;
  for (auto& [t, users] : all)
    list.push_back(describe_template(*t, users));
  return list;
}

ApiResult<TemplateView> SandboxService::get_template(const std::string& id) {
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
