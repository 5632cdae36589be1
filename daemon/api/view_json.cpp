#include "daemon/api/view_json.h"

#include "daemon/core/json_log.h"
#include "daemon/core/request_json.h"

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

// The proxy URL is what the sandbox's own processes use (their proxy variables name it).
json network_view(const NetworkSpec& n, const std::string& proxy) {
  json j = network_spec_json(n);
  j["proxy"] = proxy.empty() ? json(nullptr) : json(proxy);
  return j;
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
          {"network", t.network.internet ? network_spec_json(t.network) : json(false)},
          {"mounts", mounts_json(t.mounts)},
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
          {"network", network_view(s.network, s.proxy)},
          {"mounts", mounts_json(s.mounts)},
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
