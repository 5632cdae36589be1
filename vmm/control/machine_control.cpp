#include "vmm/control/machine_control.h"

#include <chrono>

#include "common/base/log.h"
#include "snapshot/machine_snapshot.h"
#include "vmm/machine/clone_identity.h"
#include "vmm/pool/clone_source.h"

namespace carapace {

VmControl::State MachineControl::state() const {
  if (m_.finished()) return State::kEnded;
  return m_.paused() ? State::kPaused : State::kRunning;
}

std::vector<VmControl::FsShare> MachineControl::fs_shares() const {
  std::vector<FsShare> out;
  for (const VirtioFs::Binding& b : m_.fs_bindings())
    out.push_back(FsShare{b.tag, b.shared_dir, b.mode, b.session});
  return out;
}

Status MachineControl::resume() {
  m_.resume();
  return {};
}

Result<nlohmann::json> MachineControl::snapshot(const std::string& dir, bool resume_after) {
  const bool was_paused = m_.paused();
  MachineSnapshotOptions options;
  options.resume = resume_after;
  auto t0 = std::chrono::steady_clock::now();
  auto info = TRY(snapshot_machine(m_, dir, options));
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // snapshot_machine leaves an already paused VM paused.
  if (was_paused && resume_after) m_.resume();
  return nlohmann::json{{"dir", dir},
                        {"generation", info.generation},
                        {"memory_bytes", info.memory_size},
                        {"memory_bytes_written", info.memory_bytes_written},
                        {"state_bytes", info.state_size},
                        {"ms", ms}};
}

Result<nlohmann::json> MachineControl::fork(uint32_t clones) {
  // A writable disk cannot be shared by a parent and its children, and an overlay would have to
  // be copied as of the fork: refuse rather than corrupt (read-only drives are fine).
  for (const auto& drive : m_.config().devices.drives)
    if (!drive.read_only)
      return as_invalid_input(make_error("fork: drive " + drive.path +
                                         " is writable; only read-only drives can be "
                                         "shared with children"));
  std::lock_guard lock(children_mu_);
  std::vector<MachineConfig> configs;
  std::vector<uint32_t> numbers;
  for (uint32_t k = 0; k < clones; ++k) {
    numbers.push_back(last_child_ + 1 + k);
    configs.push_back(clone_identity(m_.config(), numbers.back()));
  }
  auto t0 = std::chrono::steady_clock::now();
  auto kids = TRY(fork_machine(m_, configs));
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  last_child_ += clones;
  nlohmann::json list = nlohmann::json::array();
  for (size_t k = 0; k < kids.size(); ++k) {
    nlohmann::json child{{"index", numbers[k]}};
    if (configs[k].devices.vsock) {
      child["cid"] = configs[k].devices.vsock->guest_cid;
      child["vsock_uds"] = configs[k].devices.vsock->uds_path;
    }
    if (configs[k].console.kind == ConsoleKind::kFile) child["console"] = configs[k].console.path;
    list.push_back(std::move(child));
    children_.push_back(std::move(kids[k]));
  }
  return nlohmann::json{{"children", std::move(list)}, {"ms", ms}};
}

void MachineControl::wait_children() {
  std::vector<std::unique_ptr<Machine>> children;
  {
    std::lock_guard lock(children_mu_);
    children.swap(children_);
  }
  for (size_t i = 0; i < children.size(); ++i) {
    VmOutcome outcome = children[i]->wait();
    LOG_INFO("forked child %zu ended: %s: %s", i + 1, outcome_name(outcome),
             children[i]->outcome_detail().c_str());
  }
}

}  // namespace carapace
