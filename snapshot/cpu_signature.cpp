#include "snapshot/cpu_signature.h"

#include <cpuid.h>

#include <cstring>

namespace carapace {

namespace {
// CPUID returns a 12-character vendor; a little room, but nothing a corrupt file can inflate.
constexpr uint32_t kMaxVendorLen = 16;
}  // namespace

std::string CpuSignature::describe() const {
  return vendor + " family " + std::to_string(family) + " model " + std::to_string(model) +
         " stepping " + std::to_string(stepping);
}

void CpuSignature::encode(ByteWriter& w) const {
  w.string(vendor);
  w.u32(family);
  w.u32(model);
  w.u32(stepping);
}

Result<CpuSignature> CpuSignature::decode(ByteReader& r) {
  CpuSignature s;
  s.vendor = TRY(r.string("cpu vendor", kMaxVendorLen));
  s.family = TRY(r.u32("cpu family"));
  s.model = TRY(r.u32("cpu model"));
  s.stepping = TRY(r.u32("cpu stepping"));
  return s;
}

CpuSignature cpu_signature_from_cpuid(const std::string& vendor, uint32_t eax) {
  CpuSignature s;
  s.vendor = vendor;
  s.stepping = eax & 0xf;
  uint32_t base_family = (eax >> 8) & 0xf;
  uint32_t base_model = (eax >> 4) & 0xf;
  s.family = base_family;
  if (base_family == 0xf) s.family += (eax >> 20) & 0xff;
  s.model = base_model;
  // Intel folds the extended model in for families 6 and 15, AMD for 15 and above; the two rules
  // agree on every CPU that exists.
  if (base_family == 0x6 || base_family == 0xf) s.model |= ((eax >> 16) & 0xf) << 4;
  return s;
}

CpuSignature host_cpu_signature() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  char vendor[13] = {};
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    // The vendor string is EBX, EDX, ECX in that order.
    std::memcpy(vendor, &b, 4);
    std::memcpy(vendor + 4, &d, 4);
    std::memcpy(vendor + 8, &c, 4);
  }
  unsigned eax1 = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) eax1 = a;
  return cpu_signature_from_cpuid(vendor, eax1);
}

}  // namespace carapace
