// Register state a vCPU starts from: long mode for the Linux 64-bit entry, 32-bit protected mode
// for PVH, plus the MSRs and LAPIC wiring every boot path needs.
#pragma once

#include <cstdint>

#include "common/base/result.h"
#include "vmm/kvm/vcpu.h"

namespace carapace {

enum class BootProtocol { kLinux64, kPvh };

struct BootEntry {
  BootProtocol protocol = BootProtocol::kLinux64;
  uint64_t entry = 0;
  // Linux64: physical address of boot_params (in RSI). PVH: of hvm_start_info (in EBX).
  uint64_t boot_info = 0;
  uint64_t cr3 = 0;  // Linux64 only: identity page tables
};

// Puts the boot vCPU at the kernel's entry. Application processors are not touched: with the
// in-kernel LAPIC they wait for INIT/SIPI from the guest, as on real hardware.
Status setup_boot_vcpu(Vcpu& vcpu, const BootEntry& entry);

// MSRs and LAPIC state every vCPU starts with (BSP and APs alike).
Status setup_vcpu_msrs(Vcpu& vcpu);
Status setup_vcpu_lapic(Vcpu& vcpu);

}  // namespace carapace
