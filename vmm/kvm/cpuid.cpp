#include "vmm/kvm/cpuid.h"

namespace carapace {

namespace {

using namespace cpuid_bits;

constexpr uint32_t kLeafBasicInfo = 0x1;
constexpr uint32_t kLeafCacheParams = 0x4;
constexpr uint32_t kLeafExtFeatures = 0x7;
constexpr uint32_t kLeafPmu = 0xa;
constexpr uint32_t kLeafTopology = 0xb;
constexpr uint32_t kLeafXsave = 0xd;
constexpr uint32_t kLeafTrace = 0x14;
constexpr uint32_t kLeafTopologyV2 = 0x1f;
constexpr uint32_t kLeafExtSignature = 0x80000001;
constexpr uint32_t kLeafAddressSizes = 0x80000008;

// Leaf 7 bits the baseline template keeps; everything else there is hidden.
constexpr uint32_t kBaselineLeaf7Ebx = kLeaf7EbxFsgsbase | kLeaf7EbxErms;
// Speculation-control and mitigation bits: keeping them lets the guest protect itself.
constexpr uint32_t kBaselineLeaf7Edx =
    (1u << 10) | (1u << 26) | (1u << 27) | (1u << 28) | (1u << 29) | (1u << 31);
// CMPXCHG16B is hidden too: instruction emulators (some hosts emulate guest CPL0) often lack it,
// and Linux falls back to locks without it.
constexpr uint32_t kBaselineLeaf1EcxHidden = kLeaf1EcxFma | kLeaf1EcxCx16 | kLeaf1EcxMovbe |
                                             kLeaf1EcxPopcnt | kLeaf1EcxXsave | kLeaf1EcxOsxsave |
                                             kLeaf1EcxAvx | kLeaf1EcxF16c;
// LZCNT/ABM (POPCNT's sibling on AMD), SSE4a, XOP, FMA4, TBM.
constexpr uint32_t kBaselineExt1EcxHidden =
    kExt1EcxAbm | (1u << 6) | (1u << 11) | (1u << 16) | (1u << 21);

uint32_t ceil_log2(uint32_t n) {
  uint32_t bits = 0;
  while ((1u << bits) < n)
    ++bits;
  return bits;
}

void zero(kvm_cpuid_entry2& e) {
  e.eax = e.ebx = e.ecx = e.edx = 0;
}

void normalize_topology_leaf(kvm_cpuid_entry2& e, uint32_t apic_id, uint32_t count) {
  // Level 0: SMT (one thread per core); level 1: cores; then the invalid level that ends the list.
  switch (e.index) {
    case 0:
      e.eax = 0;
      e.ebx = 1;
      e.ecx = (1u << 8) | e.index;
      break;
    case 1:
      e.eax = ceil_log2(count);
      e.ebx = count;
      e.ecx = (2u << 8) | e.index;
      break;
    default:
      e.eax = e.ebx = 0;
      e.ecx = e.index;
      break;
  }
  e.edx = apic_id;
}

}  // namespace

Result<CpuTemplate> parse_cpu_template(std::string_view name) {
  if (name == "host") return CpuTemplate::kHost;
  if (name == "baseline") return CpuTemplate::kBaseline;
  return make_error("unknown CPU template '" + std::string(name) + "' (expected host or baseline)");
}

const char* cpu_template_name(CpuTemplate t) {
  return t == CpuTemplate::kBaseline ? "baseline" : "host";
}

CpuidTable normalize_cpuid(const CpuidTable& supported, uint32_t vcpu_index, uint32_t vcpu_count,
                           CpuTemplate tmpl) {
  CpuidTable out = supported;
  const uint32_t apic_id = vcpu_index;
  const bool baseline = tmpl == CpuTemplate::kBaseline;
  for (auto& e : out.entries()) {
    switch (e.function) {
      case kLeafBasicInfo:
        // EBX: initial APIC id [31:24], logical processors per package [23:16], CLFLUSH line
        // size in 8-byte units [15:8] (64 bytes).
        e.ebx = (apic_id << 24) | ((vcpu_count & 0xff) << 16) | (8u << 8) | (e.ebx & 0xff);
        e.ecx |= kLeaf1EcxHypervisor;
        e.ecx &= ~(kLeaf1EcxVmx | kLeaf1EcxSmx);
        if (vcpu_count > 1)
          e.edx |= kLeaf1EdxHtt;
        else
          e.edx &= ~kLeaf1EdxHtt;
        if (baseline) e.ecx &= ~kBaselineLeaf1EcxHidden;
        break;
      case kLeafCacheParams: {
        // EAX[31:26]: cores per package - 1; EAX[25:14]: threads sharing this cache - 1 (only the
        // last-level cache, level 3, is shared between cores).
        uint32_t level = (e.eax >> 5) & 0x7;
        e.eax &= 0x3fff;
        if (e.eax & 0x1f) {
          e.eax |= ((vcpu_count - 1) & 0x3f) << 26;
          if (level >= 3) e.eax |= ((vcpu_count - 1) & 0xfff) << 14;
        }
        break;
      }
      case kLeafExtFeatures:
        if (baseline) {
          if (e.index == 0) {
            e.ebx &= kBaselineLeaf7Ebx;
            e.ecx = 0;
            e.edx &= kBaselineLeaf7Edx;
          } else {
            zero(e);
          }
        }
        break;
      case kLeafPmu:
        // No virtual PMU: guests do not need it and it does not survive migration.
        zero(e);
        break;
      case kLeafTopology:
      case kLeafTopologyV2:
        normalize_topology_leaf(e, apic_id, vcpu_count);
        break;
      case kLeafXsave:
      case kLeafTrace:
        if (baseline || e.function == kLeafTrace) zero(e);
        break;
      case kLeafExtSignature:
        e.ecx &= ~(kExt1EcxSvm | kExt1EcxTopoext);
        if (baseline) e.ecx &= ~kBaselineExt1EcxHidden;
        break;
      case kLeafAddressSizes:
        // ECX[7:0]: number of cores - 1 (AMD's way of saying the same as leaf 0xb).
        e.ecx = (e.ecx & ~0xffu) | ((vcpu_count - 1) & 0xff);
        break;
      default:
        break;
    }
  }
  return out;
}

}  // namespace carapace
