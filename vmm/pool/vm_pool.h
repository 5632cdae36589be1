// VmPool: VMs restored ahead of time from one CloneSource, with vCPUs created but not running, so a
// request for a sandbox only starts one. A background thread refills the pool after
// each hand-out, within a memory budget. acquire() never waits for a refill while the pool holds a
// VM; when it is empty, it restores one on the caller's thread (a miss).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

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

  struct Stats {
    size_t ready = 0;      // VMs in the pool now
    size_t capacity = 0;   // VMs the pool aims to hold (size, bounded by the budget)
    uint64_t hits = 0;     // hand-outs served from the pool
    uint64_t misses = 0;   // hand-outs that had to restore on the caller's thread
    uint64_t refills = 0;  // VMs restored by the refill thread
    uint64_t refill_failures = 0;
    double last_refill_ms = 0;  // time to restore the last VM the refill thread added
    double mean_refill_ms = 0;
  };

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
  void refill_loop();
  MachineConfig next_config();

  const std::shared_ptr<const CloneSource> source_;
  const Options options_;
  const size_t capacity_;

  mutable std::mutex mu_;
  std::condition_variable changed_;  // the pool shrank, grew, or is stopping
  std::deque<std::unique_ptr<Machine>> ready_;
  bool stopping_ = false;
  uint64_t next_serial_ = 0;
  Stats stats_;
  double refill_ms_total_ = 0;
  std::thread refiller_;
};

}  // namespace carapace
