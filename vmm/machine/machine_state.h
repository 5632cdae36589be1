// MachineState: a paused VM's state as plain data, apart from guest RAM (which a snapshot keeps
// in its memory file). What defines the VM's shape (RAM layout, vCPU count, CPU template) is part
// of it; a restore takes those from here, and the rest of its configuration (console, device
// backends, identities) from the caller, so clones differ where they must.
#pragma once

#include <cstdint>
#include <vector>

#include "vmm/devices/serial/serial.h"
#include "vmm/kvm/cpuid.h"
#include "vmm/kvm/vcpu_state.h"
#include "vmm/kvm/vm_state.h"
#include "vmm/memory/guest_memory.h"

namespace carapace {

// One virtio-mmio device's state (transport registers, queues, device part), encoded by the device
// set; `slot` is its MMIO slot, `version` the encoding's own format version.
struct VirtioDeviceBlob {
  uint32_t slot = 0;
  uint32_t version = 0;
  std::vector<uint8_t> bytes;

  bool operator==(const VirtioDeviceBlob&) const = default;
};

struct MachineState {
  std::vector<RegionSpec> ram;  // guest-physical layout of RAM
  CpuTemplate cpu_template = CpuTemplate::kHost;
  VmState vm;
  std::vector<VcpuState> vcpus;
  Serial::State serial{};
  std::vector<VirtioDeviceBlob> virtio;  // one per virtio device, in slot order
};

}  // namespace carapace
