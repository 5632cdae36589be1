// Counters and histograms of the daemon, rendered in the Prometheus text exposition format
// (version 0.0.4) by GET /metrics. Gauges that describe the registry (live sandboxes, pool sizes,
// per-device counters) are read from the registry at render time; what happened over time
// (creates, expiries, failures, latencies) accumulates here.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace carapace::service {

// Fixed buckets in seconds: from 1 ms (a restore on real hardware) to 5 min (a template build
// on an emulating host).
inline constexpr std::array<double, 14> kLatencyBuckets = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60, 300};

class Histogram {
 public:
  void observe_ms(double ms);
  // `name_labels` is the label set without braces ("" or `source="pool"`).
  void render(std::string& out, std::string_view name, std::string_view labels) const;

 private:
  mutable std::mutex mu_;
  std::array<uint64_t, kLatencyBuckets.size()> counts_{};  // non-cumulative
  uint64_t count_ = 0;
  double sum_s_ = 0;
};

// Escapes a label value per the exposition format: backslash, double quote and newline.
std::string escape_label_value(std::string_view v);

struct ServiceMetrics {
  std::atomic<uint64_t> sandboxes_created{0};
  std::atomic<uint64_t> sandboxes_expired{0};
  std::atomic<uint64_t> egress_dropped_retired{0};  // from sandboxes already destroyed
  Histogram create_from_pool;
  Histogram create_restore;
  Histogram template_build;

  void count_failure(const std::string& reason);
  void count_request(int status);
  std::map<std::string, uint64_t> failures() const;
  std::map<int, uint64_t> requests() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> failed_;
  std::map<int, uint64_t> http_requests_;
};

// What /metrics shows about the registry at one moment.
struct RegistrySnapshot {
  struct TemplatePool {
    std::string id;
    uint64_t ready = 0, hits = 0, misses = 0;
  };
  struct DeviceCounter {
    std::string sandbox, name;
    uint64_t value = 0;
  };
  uint64_t sandboxes = 0;
  uint64_t templates = 0;
  std::vector<TemplatePool> pools;
  std::vector<DeviceCounter> devices;
  uint64_t egress_dropped_live = 0;
  // Each sandbox proxy's counters (EgressSidecar::counters), by sandbox id.
  std::map<std::string, std::map<std::string, uint64_t>> egress;
};

std::string render_metrics(const ServiceMetrics& m, const RegistrySnapshot& r);

}  // namespace carapace::service
