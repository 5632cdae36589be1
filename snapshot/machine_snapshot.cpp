#include "snapshot/machine_snapshot.h"

#include "snapshot/cpu_compat.h"
#include "snapshot/machine_state_codec.h"
#include "vmm/kvm/kvm.h"

namespace carapace {

Result<SnapshotWriteInfo> snapshot_machine(Machine& m, const std::string& dir,
                                           const MachineSnapshotOptions& options) {
  const bool was_paused = m.paused();
  if (!was_paused) TRY_STATUS(m.pause());
  // Whatever happens below, a VM this call paused must be able to go on.
  auto write = [&]() -> Result<SnapshotWriteInfo> {
    auto state = TRY(m.capture_state());
    auto file = TRY(encode_machine_state(state));
    return write_snapshot(dir, std::move(file), m.memory(), options.write);
  };
  auto info = write();
  if (!was_paused && (!info.ok() || options.resume)) m.resume();
  return info;
}

Result<MachineSnapshot> load_machine_snapshot(const std::string& dir) {
  auto loaded = TRY(load_snapshot(dir));
  MachineSnapshot snap;
  snap.taken_on = loaded.state.host_cpu;
  snap.state = TRY(decode_machine_state(loaded.state));
  snap.memory = std::move(loaded.memory);
  auto kvm = TRY(Kvm::open());
  auto supported = TRY(kvm.supported_cpuid());
  TRY_STATUS(check_snapshot_cpu(snap.taken_on, snap.state, host_cpu_signature(), supported));
  return snap;
}

Result<std::unique_ptr<Machine>> restore_machine(const MachineSnapshot& snap,
                                                 const MachineConfig& config) {
  auto mem = TRY(map_guest_memory_private(snap.memory));
  return Machine::restore(config, snap.state, std::move(mem));
}

Result<std::unique_ptr<Machine>> restore_machine_from_snapshot(const std::string& dir,
                                                               const MachineConfig& config) {
  auto snap = TRY(load_machine_snapshot(dir));
  return restore_machine(snap, config);
}

}  // namespace carapace
