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
  pool->refiller_ = std::thread([p = pool.get()] { p->refill_loop(); });
  return pool;
}

VmPool::VmPool(std::shared_ptr<const CloneSource> source, Options options, size_t capacity)
    : source_(std::move(source)), options_(std::move(options)), capacity_(capacity) {
  stats_.capacity = capacity;
}

VmPool::~VmPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (refiller_.joinable()) refiller_.join();
  // The pooled VMs never ran; their destructors release KVM objects and mappings.
}

MachineConfig VmPool::next_config() {
  uint64_t serial;
  {
    std::lock_guard lock(mu_);
    serial = next_serial_++;
  }
  return options_.config_for(serial);
}

void VmPool::refill_loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      changed_.wait(lock, [&] { return stopping_ || ready_.size() < capacity_; });
      if (stopping_) return;
    }
    // Restore outside the lock: acquire() must never wait for this.
    const auto start = std::chrono::steady_clock::now();
    auto vm = restore_clone(*source_, next_config());
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::unique_lock lock(mu_);
    if (!vm.ok()) {
      ++stats_.refill_failures;
      LOG_WARN("VM pool: refill failed: %s", vm.error().describe().c_str());
      // Back off instead of spinning on a persistent failure (out of memory, fds, ...).
      changed_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_; });
      if (stopping_) return;
      continue;
    }
    ready_.push_back(std::move(vm).value());
    ++stats_.refills;
    stats_.last_refill_ms = ms;
    refill_ms_total_ += ms;
    stats_.mean_refill_ms = refill_ms_total_ / static_cast<double>(stats_.refills);
    lock.unlock();
    changed_.notify_all();
  }
}

Result<std::unique_ptr<Machine>> VmPool::acquire() {
  std::unique_ptr<Machine> vm;
  {
    std::lock_guard lock(mu_);
    if (!ready_.empty()) {
      vm = std::move(ready_.front());
      ready_.pop_front();
      ++stats_.hits;
    } else {
      ++stats_.misses;
    }
  }
  if (vm != nullptr) {
    changed_.notify_all();  // wake the refill thread
  } else {
    vm = TRY(restore_clone(*source_, next_config()));
  }
  vm->start();
  return vm;
}

VmPool::Stats VmPool::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.ready = ready_.size();
  return s;
}

bool VmPool::wait_full(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return changed_.wait_for(lock, timeout, [&] { return ready_.size() >= capacity_; });
}

}  // namespace carapace
