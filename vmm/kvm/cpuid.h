// CPUID as each vCPU sees it: KVM's supported set, normalised for the vCPU's APIC id and the VM's
// topology, then narrowed by a CPU template.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/base/result.h"
#include "vmm/kvm/kvm.h"

namespace carapace {

enum class CpuTemplate {
  // Everything KVM supports on this host (minus nested virtualisation and the PMU).
  kHost,
  // A conservative feature set that hides XSAVE/AVX*, POPCNT, SMAP/SMEP, PKU, UMIP and other
  // recent extensions, so a snapshot taken on one CPU restores on another (like Firecracker's
  // templates), and a stock kernel avoids instructions some hosts only emulate at CPL0.
  kBaseline,
};

Result<CpuTemplate> parse_cpu_template(std::string_view name);
const char* cpu_template_name(CpuTemplate t);

// The CPUID table for vCPU `vcpu_index` of `vcpu_count` (APIC id == vCPU index, one package, one
// thread per core). Pure function of its inputs, so it is unit tested on fake tables.
CpuidTable normalize_cpuid(const CpuidTable& supported, uint32_t vcpu_index, uint32_t vcpu_count,
                           CpuTemplate tmpl);

// CPUID bit positions the normalisation and the templates touch.
namespace cpuid_bits {
inline constexpr uint32_t kLeaf1EcxFma = 1u << 12;
inline constexpr uint32_t kLeaf1EcxCx16 = 1u << 13;
inline constexpr uint32_t kLeaf1EcxVmx = 1u << 5;
inline constexpr uint32_t kLeaf1EcxSmx = 1u << 6;
inline constexpr uint32_t kLeaf1EcxMovbe = 1u << 22;
inline constexpr uint32_t kLeaf1EcxPopcnt = 1u << 23;
inline constexpr uint32_t kLeaf1EcxXsave = 1u << 26;
inline constexpr uint32_t kLeaf1EcxOsxsave = 1u << 27;
inline constexpr uint32_t kLeaf1EcxAvx = 1u << 28;
inline constexpr uint32_t kLeaf1EcxF16c = 1u << 29;
inline constexpr uint32_t kLeaf1EcxHypervisor = 1u << 31;
inline constexpr uint32_t kLeaf1EdxHtt = 1u << 28;
inline constexpr uint32_t kLeaf7EbxFsgsbase = 1u << 0;
inline constexpr uint32_t kLeaf7EbxSmep = 1u << 7;
inline constexpr uint32_t kLeaf7EbxErms = 1u << 9;
inline constexpr uint32_t kLeaf7EbxSmap = 1u << 20;
inline constexpr uint32_t kLeaf7EcxUmip = 1u << 2;
inline constexpr uint32_t kLeaf7EcxPku = 1u << 3;
inline constexpr uint32_t kLeaf7EcxOspke = 1u << 4;
inline constexpr uint32_t kExt1EcxSvm = 1u << 2;
inline constexpr uint32_t kExt1EcxAbm = 1u << 5;
inline constexpr uint32_t kExt1EcxTopoext = 1u << 22;
}  // namespace cpuid_bits

}  // namespace carapace
