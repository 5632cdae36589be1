#include "daemon/core/service_metrics.h"

#include <cstdio>

namespace carapace::service {
namespace {

std::string number(double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void sample(std::string& out, std::string_view name, std::string_view labels, uint64_t v) {
  out.append(name);
  if (!labels.empty()) out.append("{").append(labels).append("}");
  out.append(" ").append(std::to_string(v)).append("\n");
}

std::string label(std::string_view k, std::string_view v) {
  return std::string(k) + "=\"" + escape_label_value(v) + "\"";
}

uint64_t value_of(const std::map<std::string, uint64_t>& c, const char* name) {
  auto it = c.find(name);
  return it == c.end() ? 0 : it->second;
}

// The sandbox proxies' decisions and bytes (docs/api.md, Egress).
void render_egress(std::string& out,
                   const std::map<std::string, std::map<std::string, uint64_t>>& egress) {
  struct Plain {
    const char* metric;
    const char* type;
    const char* help;
    const char* counter;
  };
  static constexpr Plain kPlain[] = {
      {"carapace_egress_connections_total", "counter",
       "Connections the sandbox's egress proxy accepted.", "egress_connections"},
      {"carapace_egress_allowed_total", "counter", "Egress requests allowed and dialled.",
       "egress_allowed"},
      {"carapace_egress_upstream_failures_total", "counter",
       "Allowed egress requests whose destination was not resolved or not reached.",
       "egress_upstream_failures"},
      {"carapace_egress_active_connections", "gauge", "Egress connections open now.",
       "egress_active"},
      {"carapace_egress_credential_injected_total", "counter",
       "Requests the egress proxy put a credential's secret into.", "egress_credential_injected"},
      {"carapace_egress_credential_refused_total", "counter",
       "Requests refused for a credential's sentinel or slot (exfiltration attempts among them).",
       "egress_credential_refused"},
  };
  for (const Plain& p : kPlain) {
    header(out, p.metric, p.type, p.help);
    for (const auto& [id, c] : egress)
      sample(out, p.metric, label("sandbox", id), value_of(c, p.counter));
  }
  header(out, "carapace_egress_denied_total", "counter", "Egress requests refused, by reason.");
  static constexpr std::pair<const char*, const char*> kDenied[] = {
      {"rule", "egress_denied_rule"},
      {"address", "egress_denied_address"},
      {"bad_request", "egress_denied_bad_request"},
      {"capacity", "egress_denied_capacity"}};
  for (const auto& [id, c] : egress)
    for (const auto& [reason, counter] : kDenied)
      sample(out, "carapace_egress_denied_total",
             label("sandbox", id) + "," + label("reason", reason), value_of(c, counter));
  header(out, "carapace_egress_bytes_total", "counter", "Bytes through the egress proxy.");
  for (const auto& [id, c] : egress) {
    sample(out, "carapace_egress_bytes_total",
           label("sandbox", id) + "," + label("direction", "up"), value_of(c, "egress_bytes_up"));
    sample(out, "carapace_egress_bytes_total",
           label("sandbox", id) + "," + label("direction", "down"),
           value_of(c, "egress_bytes_down"));
  }
}

}  // namespace

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void Histogram::observe_ms(double ms) {
  double s = ms / 1000.0;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    if (s <= kLatencyBuckets[i]) {
      ++counts_[i];
      break;
    }
  }
  ++count_;
  sum_s_ += s;
}

void Histogram::render(std::string& out, std::string_view name, std::string_view labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string prefix = labels.empty() ? "" : std::string(labels) + ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    cumulative += counts_[i];
    out.append(name).append("_bucket{").append(prefix);
    out.append("le=\"").append(number(kLatencyBuckets[i])).append("\"} ");
    out.append(std::to_string(cumulative)).append("\n");
  }
  out.append(name).append("_bucket{").append(prefix).append("le=\"+Inf\"} ");
  out.append(std::to_string(count_)).append("\n");
  std::string braces = labels.empty() ? "" : "{" + std::string(labels) + "}";
  out.append(name).append("_sum").append(braces).append(" ").append(number(sum_s_)).append("\n");
  out.append(name).append("_count").append(braces).append(" ");
  out.append(std::to_string(count_)).append("\n");
}

void ServiceMetrics::count_failure(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++failed_[reason];
}

void ServiceMetrics::count_request(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++http_requests_[status];
}

std::map<std::string, uint64_t> ServiceMetrics::failures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

std::map<int, uint64_t> ServiceMetrics::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return http_requests_;
}

std::string render_metrics(const ServiceMetrics& m, const RegistrySnapshot& r) {
  std::string out;
  header(out, "carapace_sandboxes", "gauge", "Live sandboxes.");
  sample(out, "carapace_sandboxes", "", r.sandboxes);
  header(out, "carapace_templates", "gauge", "Templates.");
  sample(out, "carapace_templates", "", r.templates);

  header(out, "carapace_pool_ready", "gauge", "Ready instances in each template's pool.");
  for (const auto& p : r.pools)
    sample(out, "carapace_pool_ready", label("template", p.id), p.ready);
  header(out, "carapace_pool_hits_total", "counter", "Sandboxes served from a pool.");
  for (const auto& p : r.pools)
    sample(out, "carapace_pool_hits_total", label("template", p.id), p.hits);
  header(out, "carapace_pool_misses_total", "counter",
         "Sandboxes started on demand because the pool was empty.");
  for (const auto& p : r.pools)
    sample(out, "carapace_pool_misses_total", label("template", p.id), p.misses);

  header(out, "carapace_sandbox_create_seconds", "histogram",
         "Time to create a sandbox, by source.");
  m.create_from_pool.render(out, "carapace_sandbox_create_seconds", label("source", "pool"));
  m.create_restore.render(out, "carapace_sandbox_create_seconds", label("source", "restore"));
  header(out, "carapace_template_build_seconds", "histogram", "Time to build a template.");
  m.template_build.render(out, "carapace_template_build_seconds", "");

  header(out, "carapace_sandboxes_created_total", "counter", "Sandboxes created.");
  sample(out, "carapace_sandboxes_created_total", "", m.sandboxes_created.load());
  header(out, "carapace_sandboxes_expired_total", "counter",
         "Sandboxes destroyed because their time to live ran out.");
  sample(out, "carapace_sandboxes_expired_total", "", m.sandboxes_expired.load());
  header(out, "carapace_sandboxes_failed_total", "counter",
         "Sandboxes that failed: create errors, exits, unresponsive agents.");
  for (const auto& [reason, n] : m.failures())
    sample(out, "carapace_sandboxes_failed_total", label("reason", reason), n);

  header(out, "carapace_device_counter", "gauge", "Host-side per-device counters of a sandbox.");
  for (const auto& d : r.devices) {
    sample(out, "carapace_device_counter",
           label("sandbox", d.sandbox) + "," + label("name", d.name), d.value);
  }
  header(out, "carapace_egress_dropped_packets_total", "counter",
         "Egress packets dropped by sandbox network policies.");
  sample(out, "carapace_egress_dropped_packets_total", "",
         m.egress_dropped_retired.load() + r.egress_dropped_live);
  render_egress(out, r.egress);
  header(out, "carapace_http_requests_total", "counter", "API requests answered, by status.");
  for (const auto& [code, n] : m.requests())
    sample(out, "carapace_http_requests_total", label("code", std::to_string(code)), n);
  return out;
}

}  // namespace carapace::service
