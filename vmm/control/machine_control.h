// A running Machine as the control API sees it (vmm/control/vm_api.h). Compiled into
// carapace_snapshot: snapshots need that library, which sits above carapace_vmm.
#pragma once

#include "vmm/control/vm_api.h"
#include "vmm/machine/machine.h"

#include <memory>
#include <mutex>
#include <vector>

namespace carapace {

class MachineControl : public VmControl {
 public:
  explicit MachineControl(Machine& m) : m_(m) {}
  State state() const override;
  uint32_t vcpus() const override { return static_cast<uint32_t>(m_.vcpu_count()); }
  uint64_t mem_bytes() const override { return m_.memory().total_size(); }
  Status pause() override { return m_.pause(); }
  Status resume() override;
  Result<nlohmann::json> snapshot(const std::string& dir, bool resume_after) override;
  Result<nlohmann::json> fork(uint32_t clones) override;
  std::map<std::string, uint64_t> counters() const override { return m_.counters(); }
  std::vector<FsShare> fs_shares() const override;
  Status bind_fs(const std::string& tag, const std::string& path, FsMode mode) override {
    return m_.bind_fs(tag, path, mode);
  }
  // Waits for every forked child to end (they run on after the parent); logs how each ended.
  void wait_children();

 private:
  Machine& m_;
  std::mutex children_mu_;
  std::vector<std::unique_ptr<Machine>> children_;
  uint32_t last_child_ = 0;  // children are numbered on across forks: identities never repeat
};

}  // namespace carapace
