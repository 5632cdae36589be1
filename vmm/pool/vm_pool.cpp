#include "vmm/pool/vm_pool.h"

#include "common/base/log.h"

namespace carapace {

namespace {

uint64_t ram_bytes(const MachineState& state) {
  uint64_t total = 0;
  for (const RegionSpec& r : state.ram)
    total += r.size;
  return total;
}

}  // namespace

Result<std::unique_ptr<VmPool>> VmPool::create(std::shared_ptr<const CloneSource> source,
                                               Options options) {
  if (source == nullptr) return as_invalid_input(make_error("VM pool: no clone source"));
  if (!options.config_for) return as_invalid_input(make_error("VM pool: no clone configuration"));
  size_t capacity = options.size;
  const uint64_t per_vm = ram_bytes(source->state);
  if (options.memory_budget_bytes != 0 && per_vm != 0) {
    const uint64_t fit = options.memory_budget_bytes / per_vm;
    if (fit == 0)
      return as_invalid_input(make_error(
          "VM pool: memory budget of " + std::to_string(options.memory_budget_bytes >> 20) +
          " MiB is below one VM's RAM (" + std::to_string(per_vm >> 20) + " MiB)"));
    if (fit < capacity) capacity = static_cast<size_t>(fit);
  }
  std::unique_ptr<VmPool> pool(new VmPool(std::move(source), std::move(options), capacity));
  pool->ready_.start();
  return pool;
}

VmPool::VmPool(std::shared_ptr<const CloneSource> source, Options options, size_t capacity)
    : source_(std::move(source)), options_(std::move(options)), ready_([this, capacity] {
        ReadyPool<Machine>::Options o;
        o.capacity = capacity;
        o.make = [this] { return restore_next(); };
        o.on_refill_error = [](const Error& e) {
          LOG_WARN("VM pool: refill failed: %s", e.describe().c_str());
        };
        // A restore that failed is retried soon: restores are fast, failures rare.
        o.retry_after = std::chrono::milliseconds(100);
        return o;
      }()) {}

// The pooled VMs never ran; their destructors release KVM objects and mappings.
VmPool::~VmPool() = default;

Result<std::unique_ptr<Machine>> VmPool::restore_next() {
  uint64_t serial;
  {
    std::lock_guard lock(serial_mu_);
    serial = next_serial_++;
  }
  return restore_clone(*source_, options_.config_for(serial));
}

Result<std::unique_ptr<Machine>> VmPool::acquire() {
  std::unique_ptr<Machine> vm = TRY(ready_.take());
  if (vm != nullptr) {
    ready_.count_hit();
  } else {
    ready_.count_miss();
    vm = TRY(restore_next());
  }
  vm->start();
  return vm;
}

VmPool::Stats VmPool::stats() const {
  return ready_.stats();
}

bool VmPool::wait_full(std::chrono::milliseconds timeout) {
  return ready_.wait_full(timeout);
}

}  // namespace carapace
