#include "daemon/api/view_json.h"

#include "daemon/core/json_log.h"

namespace carapace::service {

using nlohmann::json;

namespace {

const char* state_name(SandboxView::State s) {
  switch (s) {
    case SandboxView::State::kRunning:
      return "running";
    case SandboxView::State::kPaused:
      return "paused";
    case SandboxView::State::kDestroyed:
      break;
  }
  return "destroyed";
}

}  // namespace

json to_json(const TemplateView& t) {
  return {{"id", t.id},
          {"name", t.name},
          {"isolation", isolation_name(t.spec.isolation)},
          {"kernel", t.spec.kernel},
          {"rootfs", t.spec.rootfs},
          {"vcpus", t.spec.vcpus},
          {"mem_mib", t.spec.mem_mib},
          {"pool",
           {{"size", t.spec.pool_size},
            {"ready", t.pool.ready},
            {"hits", t.pool.hits},
            {"misses", t.pool.misses},
            {"refill_failures", t.pool.refill_failures}}},
          {"build_ms", t.build_ms},
          {"created_at", rfc3339(t.created_at)},
          {"sandboxes", t.sandboxes},
          {"backend", t.backend}};
}

json to_json(const SandboxView& s) {
  return {{"id", s.id},
          {"template", s.template_id},
          {"isolation", isolation_name(s.isolation)},
          {"created_at", rfc3339(s.created_at)},
          {"expires_at", rfc3339(s.expires_at)},
          {"timeout_s", s.timeout_s},
          {"from_pool", s.from_pool},
          {"create_ms", s.create_ms},
          {"parent", s.parent.empty() ? json(nullptr) : json(s.parent)},
          {"state", state_name(s.state)},
          {"backend", s.backend}};
}

json to_json(const HealthView& h) {
  json isolations = json::array();
  for (Isolation i : h.isolations)
    isolations.push_back(isolation_name(i));
  return {{"version", h.version},
          {"isolation", isolations},
          {"default_isolation", isolation_name(h.default_isolation)},
          {"kvm", h.kvm},
          {"cpu_virtualization", h.cpu_virtualization},
          {"jailed_vmms", h.jailed_vmms},
          {"sandboxes", h.sandboxes},
          {"templates", h.templates}};
}

}  // namespace carapace::service
