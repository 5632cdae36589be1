// MachineState <-> StateFile: what each section of a machine snapshot holds (see FORMAT.md,
// "Machine sections"). Lives in snapshot/ rather than vmm/machine/ because it speaks the
// container's types; carapace_vmm never depends on this library.
//
// Nothing is stored twice (docs/security.md #20): the RAM layout is the state file's memory layout,
// the CPU template is the header's, the vCPU count is the number of vCPU sections (indices 0..n-1,
// no gaps), the irqchip ids are implied by their position. Decoding bounds every count by the bytes
// left, refuses trailing bytes, unknown section types, versions and out-of-range values
// (docs/security.md #22); what KVM itself validates (register contents) is left to KVM at restore.
#pragma once

#include <cstdint>

#include "common/base/result.h"
#include "snapshot/state_file.h"
#include "vmm/machine/machine_state.h"

namespace carapace {

// Each section's own format version; bump on any change to its payload.
inline constexpr uint32_t kVmSectionVersion = 1;
inline constexpr uint32_t kVcpuSectionVersion = 1;
inline constexpr uint32_t kSerialSectionVersion = 1;
// kDevice index of the COM1 UART (the only non-virtio device with state).
inline constexpr uint32_t kSerialDeviceIndex = 0;

// Bounds a corrupt or hostile file cannot exceed.
inline constexpr uint32_t kMaxSnapshotVcpus = 254;         // the MP table's limit
inline constexpr uint32_t kMaxSnapshotCpuidEntries = 256;  // KVM_MAX_CPUID_ENTRIES
inline constexpr uint32_t kMaxSnapshotMsrs = 1024;
inline constexpr uint32_t kMaxVirtioDevices = 64;
inline constexpr uint64_t kMaxVirtioBlobBytes = 1ull << 20;

// A StateFile holding `state` (cpu_template, memory layout and sections; write_snapshot fills in
// the host CPU and memory generation). Fails on a state decode would refuse (no vCPUs, too many).
Result<StateFile> encode_machine_state(const MachineState& state);

// The inverse; every error is ErrorKind::kInvalidInput and names the section and field.
Result<MachineState> decode_machine_state(const StateFile& file);

}  // namespace carapace
