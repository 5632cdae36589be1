// The host CPU a snapshot was taken on. Restoring on a different CPU model can fail in subtle ways
// (features the guest saw vanish, MSRs that do not exist), so the state file records the host's
// CPUID vendor and family/model/stepping and the restore path compares them.
#pragma once

#include <cstdint>
#include <string>

#include "common/base/result.h"
#include "common/codec/byte_codec.h"

namespace carapace {

struct CpuSignature {
  std::string vendor;   // CPUID leaf 0, e.g. "GenuineIntel", "AuthenticAMD"
  uint32_t family = 0;  // display family/model: the extended fields folded in (SDM vol. 2A, CPUID)
  uint32_t model = 0;
  uint32_t stepping = 0;

  bool operator==(const CpuSignature&) const = default;
  // "GenuineIntel family 6 model 143 stepping 8"
  std::string describe() const;

  void encode(ByteWriter& w) const;
  static Result<CpuSignature> decode(ByteReader& r);
};

// From CPUID leaf 1 EAX.
CpuSignature cpu_signature_from_cpuid(const std::string& vendor, uint32_t leaf1_eax);
// This host's signature (CPUID leaves 0 and 1).
CpuSignature host_cpu_signature();

}  // namespace carapace
