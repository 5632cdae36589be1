// Snapshotting a running Machine to a directory and restoring Machines from one. Free functions
// here rather than Machine methods: carapace_vmm (Machine) must not depend on this library,
// which sits above it (see snapshot/CMakeLists.txt).
#pragma once

#include <memory>
#include <string>

#include "common/base/result.h"
#include "snapshot/cpu_signature.h"
#include "snapshot/memory_image.h"
#include "snapshot/snapshot_dir.h"
#include "vmm/machine/machine.h"

namespace carapace {

struct MachineSnapshotOptions {
  // Resume a VM that was running when the snapshot began. A VM that was already paused stays
  // paused either way.
  bool resume = true;
  WriteOptions write;
};

// Pauses `m` (if it is not paused yet), captures its state and writes it with its RAM to `dir`
// (atomic replace, snapshot_dir.h), then resumes it per `options`. On any failure (ENOSPC,
// EFBIG, EACCES, a state that cannot be captured) a VM this call paused is resumed, so the source
// VM goes on as if nothing happened (docs/security.md #24). The caller serialises control calls
// (pause/resume/snapshot) on one Machine.
Result<SnapshotWriteInfo> snapshot_machine(Machine& m, const std::string& dir,
                                           const MachineSnapshotOptions& options = {});

// A snapshot read, checked (docs/security.md #19-#22) and found compatible with this host; restore
// as many Machines from it as wanted.
struct MachineSnapshot {
  CpuSignature taken_on;
  MachineState state;
  MemoryImage memory;  // read-only; each restore maps it MAP_PRIVATE
};

// load_snapshot + decode_machine_state + check_snapshot_cpu against this host's KVM. Bad or
// incompatible snapshots are ErrorKind::kInvalidInput; nothing is built.
Result<MachineSnapshot> load_machine_snapshot(const std::string& dir);

// One VM from `snap`: RAM mapped copy-on-write from the memory file, state applied; nothing runs
// yet. Shape (RAM, vCPUs, CPU template) comes from the snapshot; console, device backends and
// identities (vsock CID and socket, MAC) and timeout from `config`.
Result<std::unique_ptr<Machine>> restore_machine(const MachineSnapshot& snap,
                                                 const MachineConfig& config);

// Both of the above, for one VM.
Result<std::unique_ptr<Machine>> restore_machine_from_snapshot(const std::string& dir,
                                                               const MachineConfig& config);

}  // namespace carapace
