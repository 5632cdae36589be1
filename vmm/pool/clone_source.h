// CloneSource: a paused VM frozen into an image many clones can start from: its state as plain data
// and its RAM in a sealed memfd (or a snapshot's memory file). Clones map the RAM MAP_PRIVATE, so
// every clean page is shared through the page cache and a clone copies only what it writes.
//
// Fork is built from these pieces: capture a source from a running VM (pause, copy,
// resume the parent), then restore children from it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "snapshot/memory_image.h"
#include "vmm/machine/machine.h"
#include "vmm/machine/machine_config.h"
#include "vmm/machine/machine_state.h"

namespace carapace {

struct CloneSource {
  MachineState state;
  MemoryImage memory;
};

// Pauses `vm` (if it is not paused already), captures its state and copies its RAM into a sealed
// memfd, then resumes it if it was running before. On an error the VM is resumed as well: the
// source VM never stays stopped because a copy failed.
Result<std::shared_ptr<const CloneSource>> capture_clone_source(Machine& vm);

// A new VM from `source`, configured by `config` (console, device backends, identity, timeout;
// the shape comes from the source). Its vCPUs exist but do not run until start().
Result<std::unique_ptr<Machine>> restore_clone(const CloneSource& source,
                                               const MachineConfig& config);

// Fork: captures `parent` (which keeps running) and starts one child per entry of `configs`.
// Either every child starts or none is left behind.
Result<std::vector<std::unique_ptr<Machine>>> fork_machine(
    Machine& parent, const std::vector<MachineConfig>& configs);

}  // namespace carapace
