#include "snapshot/cpu_compat.h"

#include <cstdio>

#include "vmm/kvm/cpuid.h"

namespace carapace {

namespace {

Error refuse(const std::string& msg) {
  return as_invalid_input(make_error("snapshot is not compatible with this host: " + msg));
}

// A feature register that the guest may rely on, and the bits the VMM sets itself (so they are
// not in KVM's supported set and say nothing about the host).
struct CheckedReg {
  uint32_t function;
  uint32_t index;
  uint32_t kvm_cpuid_entry2::*reg;
  const char* name;
  uint32_t vmm_owned;
};

const CheckedReg kChecked[] = {
    {1, 0, &kvm_cpuid_entry2::ecx, "1.ecx",
     cpuid_bits::kLeaf1EcxHypervisor | cpuid_bits::kLeaf1EcxOsxsave},
    {1, 0, &kvm_cpuid_entry2::edx, "1.edx", cpuid_bits::kLeaf1EdxHtt},
    {7, 0, &kvm_cpuid_entry2::ebx, "7.ebx", 0},
    {7, 0, &kvm_cpuid_entry2::ecx, "7.ecx", cpuid_bits::kLeaf7EcxOspke},
    {7, 0, &kvm_cpuid_entry2::edx, "7.edx", 0},
    {0x80000001, 0, &kvm_cpuid_entry2::ecx, "0x80000001.ecx", 0},
    {0x80000001, 0, &kvm_cpuid_entry2::edx, "0x80000001.edx", 0},
};

}  // namespace

Status check_snapshot_cpu(const CpuSignature& snap, const MachineState& state,
                          const CpuSignature& host, const CpuidTable& supported) {
  if (snap.vendor != host.vendor)
    return refuse("taken on a " + snap.vendor + " CPU, this host is " + host.vendor);
  if (state.cpu_template == CpuTemplate::kHost &&
      (snap.family != host.family || snap.model != host.model))
    return refuse("taken with --cpu-template host on " + snap.describe() + ", this host is " +
                  host.describe() + " (snapshots that move between CPUs need " +
                  "--cpu-template baseline)");
  for (size_t v = 0; v < state.vcpus.size(); ++v) {
    for (const auto& c : kChecked) {
      const kvm_cpuid_entry2* saved = state.vcpus[v].cpuid.find(c.function, c.index);
      if (!saved) continue;
      const kvm_cpuid_entry2* have = supported.find(c.function, c.index);
      uint32_t have_bits = have ? have->*c.reg : 0;
      uint32_t missing = (saved->*c.reg) & ~c.vmm_owned & ~have_bits;
      if (missing) {
        char bits[16];
        snprintf(bits, sizeof bits, "0x%08x", missing);
        return refuse("vCPU " + std::to_string(v) + " uses CPUID " + c.name + " features " + bits +
                      " that this host's KVM does not offer");
      }
    }
  }
  return {};
}

}  // namespace carapace
