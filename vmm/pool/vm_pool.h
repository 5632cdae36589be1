// VmPool: VMs restored ahead of time from one CloneSource, with vCPUs created but not running, so a
// request for a sandbox only starts one. A background thread refills the pool after
// each hand-out, within a memory budget. acquire() never waits for a refill while the pool holds a
// VM; when it is empty, it restores one on the caller's thread (a miss).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "common/base/ready_pool.h"
#include "common/base/result.h"
#include "vmm/pool/clone_source.h"

namespace carapace {

class VmPool {
 public:
  struct Options {
    size_t size = 4;  // VMs kept ready
    // Upper bound on the guest RAM of the VMs held ready (0: no bound). Charged at each VM's full
    // RAM size, the most it can ever dirty, although idle clones share their clean pages.
    uint64_t memory_budget_bytes = 0;
    // The configuration of clone number `serial` (0, 1, ...): console, device backends and
    // identities (vsock CID and socket, MAC, overlays) must differ between clones.
    std::function<MachineConfig(uint64_t serial)> config_for;
  };

  // ready, capacity (size, bounded by the budget), hits, misses (hand-outs restored on the
  // caller's thread), refills, refill failures, last and mean refill time.
  using Stats = ReadyPool<Machine>::Stats;

  // Starts the refill thread, which fills the pool in the background.
  static Result<std::unique_ptr<VmPool>> create(std::shared_ptr<const CloneSource> source,
                                                Options options);
  ~VmPool();
  VmPool(const VmPool&) = delete;
  VmPool& operator=(const VmPool&) = delete;

  // A running VM: a pooled one resumed, or on a miss one restored now.
  Result<std::unique_ptr<Machine>> acquire();
  Stats stats() const;
  // Blocks until the pool holds its capacity, or `timeout` passes; false on timeout.
  bool wait_full(std::chrono::milliseconds timeout);

 private:
  VmPool(std::shared_ptr<const CloneSource> source, Options options, size_t capacity);
  Result<std::unique_ptr<Machine>> restore_next();

  const std::shared_ptr<const CloneSource> source_;
  const Options options_;
  std::mutex serial_mu_;
  uint64_t next_serial_ = 0;
  ReadyPool<Machine> ready_;  // last: its refill thread uses the members above
};

}  // namespace carapace
