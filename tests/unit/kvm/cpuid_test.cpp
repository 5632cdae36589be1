// CPUID normalisation on a fake "everything supported" table: topology per vCPU, nested
// virtualisation and the PMU hidden, and the baseline template's feature mask.
#include "vmm/kvm/cpuid.h"

#include "vmm/kvm/kvm_uapi.h"

#include <gtest/gtest.h>

#include <vector>

namespace carapace {
namespace {

using namespace cpuid_bits;
constexpr uint32_t kAll = 0xffffffff;

kvm_cpuid_entry2 entry(uint32_t function, uint32_t index = 0, bool indexed = false) {
  kvm_cpuid_entry2 e{};
  e.function = function;
  e.index = index;
  e.flags = indexed ? KVM_CPUID_FLAG_SIGNIFCANT_INDEX : 0;
  e.eax = e.ebx = e.ecx = e.edx = kAll;
  return e;
}

// Every register bit set, as a host that supports everything would report.
CpuidTable all_bits_table() {
  std::vector<kvm_cpuid_entry2> v;
  v.push_back(entry(0x0));
  v.push_back(entry(0x1));
  for (uint32_t level = 1; level <= 3; ++level) {
    kvm_cpuid_entry2 e = entry(0x4, level - 1, true);
    e.eax = (level << 5) | 1 | (0x3ffffu << 8);  // data cache at `level`, junk in the count fields
    v.push_back(e);
  }
  kvm_cpuid_entry2 end4 = entry(0x4, 3, true);  // "no more caches"
  end4.eax = 0;
  v.push_back(end4);
  v.push_back(entry(0x7, 0, true));
  v.push_back(entry(0x7, 1, true));
  v.push_back(entry(0xa));
  for (uint32_t i = 0; i <= 2; ++i)
    v.push_back(entry(0xb, i, true));
  v.push_back(entry(0xd, 0, true));
  v.push_back(entry(0xd, 1, true));
  v.push_back(entry(0x80000001));
  v.push_back(entry(0x80000008));
  return CpuidTable(std::move(v));
}

const kvm_cpuid_entry2& get(const CpuidTable& t, uint32_t function, uint32_t index = 0) {
  const kvm_cpuid_entry2* e = t.find(function, index);
  EXPECT_NE(e, nullptr) << std::hex << function << "." << index;
  static const kvm_cpuid_entry2 kMissing{};
  return e ? *e : kMissing;
}

TEST(CpuidTest, Leaf1CarriesApicIdCountAndHypervisorBit) {
  auto in = all_bits_table();
  for (uint32_t cpu : {0u, 1u, 3u}) {
    SCOPED_TRACE(cpu);
    auto out = normalize_cpuid(in, cpu, 4, CpuTemplate::kHost);
    const auto& l1 = get(out, 0x1);
    EXPECT_EQ(l1.ebx >> 24, cpu) << "initial APIC id";
    EXPECT_EQ((l1.ebx >> 16) & 0xff, 4u) << "logical processor count";
    EXPECT_EQ((l1.ebx >> 8) & 0xff, 8u) << "CLFLUSH line size (8-byte units)";
    EXPECT_TRUE(l1.edx & kLeaf1EdxHtt);
    EXPECT_TRUE(l1.ecx & kLeaf1EcxHypervisor);
    EXPECT_FALSE(l1.ecx & kLeaf1EcxVmx);
    EXPECT_FALSE(l1.ecx & kLeaf1EcxSmx);
  }
}

TEST(CpuidTest, SingleVcpuHasNoHtt) {
  auto out = normalize_cpuid(all_bits_table(), 0, 1, CpuTemplate::kHost);
  EXPECT_FALSE(get(out, 0x1).edx & kLeaf1EdxHtt);
  EXPECT_EQ((get(out, 0x1).ebx >> 16) & 0xff, 1u);
}

TEST(CpuidTest, TopologyLeafPerVcpu) {
  auto in = all_bits_table();
  for (uint32_t cpu : {0u, 5u}) {
    SCOPED_TRACE(cpu);
    auto out = normalize_cpuid(in, cpu, 6, CpuTemplate::kHost);
    const auto& smt = get(out, 0xb, 0);
    EXPECT_EQ(smt.eax, 0u) << "one thread per core: shift 0";
    EXPECT_EQ(smt.ebx, 1u);
    EXPECT_EQ(smt.ecx, (1u << 8) | 0) << "level type SMT";
    EXPECT_EQ(smt.edx, cpu) << "x2APIC id";
    const auto& core = get(out, 0xb, 1);
    EXPECT_EQ(core.eax, 3u) << "ceil(log2(6))";
    EXPECT_EQ(core.ebx, 6u);
    EXPECT_EQ(core.ecx, (2u << 8) | 1) << "level type core";
    EXPECT_EQ(core.edx, cpu);
    const auto& end = get(out, 0xb, 2);
    EXPECT_EQ(end.eax, 0u);
    EXPECT_EQ(end.ebx, 0u);
    EXPECT_EQ(end.ecx, 2u) << "invalid level ends the list";
    EXPECT_EQ(end.edx, cpu);
  }
}

TEST(CpuidTest, CacheLeafReportsSharingForLastLevelOnly) {
  auto out = normalize_cpuid(all_bits_table(), 0, 4, CpuTemplate::kHost);
  for (uint32_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    const auto& c = get(out, 0x4, i);
    EXPECT_EQ(c.eax >> 26, 3u) << "cores per package - 1";
    uint32_t sharing = (c.eax >> 14) & 0xfff;
    EXPECT_EQ(sharing, i == 2 ? 3u : 0u) << "threads sharing this cache - 1";
    EXPECT_EQ(c.eax & 0x1f, 1u) << "cache type preserved";
    EXPECT_EQ((c.eax >> 5) & 7, i + 1) << "cache level preserved";
  }
  EXPECT_EQ(get(out, 0x4, 3).eax, 0u) << "the terminating subleaf stays empty";
}

TEST(CpuidTest, PmuLeafZeroedAndSvmHidden) {
  for (auto tmpl : {CpuTemplate::kHost, CpuTemplate::kBaseline}) {
    SCOPED_TRACE(cpu_template_name(tmpl));
    auto out = normalize_cpuid(all_bits_table(), 0, 2, tmpl);
    const auto& pmu = get(out, 0xa);
    EXPECT_EQ(pmu.eax | pmu.ebx | pmu.ecx | pmu.edx, 0u);
    const auto& ext = get(out, 0x80000001);
    EXPECT_FALSE(ext.ecx & kExt1EcxSvm);
    EXPECT_FALSE(ext.ecx & kExt1EcxTopoext);
    EXPECT_EQ(get(out, 0x80000008).ecx & 0xff, 1u) << "cores - 1";
  }
}

TEST(CpuidTest, HostTemplateKeepsModernFeatures) {
  auto out = normalize_cpuid(all_bits_table(), 0, 1, CpuTemplate::kHost);
  const auto& l1 = get(out, 0x1);
  for (uint32_t bit : {kLeaf1EcxXsave, kLeaf1EcxOsxsave, kLeaf1EcxAvx, kLeaf1EcxPopcnt,
                       kLeaf1EcxFma, kLeaf1EcxF16c, kLeaf1EcxMovbe})
    EXPECT_TRUE(l1.ecx & bit) << std::hex << bit;
  EXPECT_EQ(get(out, 0x7, 0).ebx, kAll);
  EXPECT_EQ(get(out, 0x7, 0).ecx, kAll);
  EXPECT_EQ(get(out, 0x7, 1).eax, kAll);
  EXPECT_EQ(get(out, 0xd, 0).eax, kAll);
  EXPECT_TRUE(get(out, 0x80000001).ecx & kExt1EcxAbm);
}

TEST(CpuidTest, BaselineTemplateHidesModernFeatures) {
  auto out = normalize_cpuid(all_bits_table(), 0, 2, CpuTemplate::kBaseline);
  const auto& l1 = get(out, 0x1);
  for (uint32_t bit : {kLeaf1EcxXsave, kLeaf1EcxOsxsave, kLeaf1EcxAvx, kLeaf1EcxPopcnt,
                       kLeaf1EcxFma, kLeaf1EcxF16c, kLeaf1EcxMovbe, kLeaf1EcxVmx})
    EXPECT_FALSE(l1.ecx & bit) << std::hex << bit;
  EXPECT_TRUE(l1.ecx & kLeaf1EcxHypervisor);
  EXPECT_TRUE(l1.ecx & 1) << "SSE3 is part of the baseline";
  EXPECT_EQ(l1.edx, kAll) << "leaf 1 EDX (SSE2, APIC, HTT with 2 vCPUs...) untouched";

  const auto& l7 = get(out, 0x7, 0);
  EXPECT_EQ(l7.ebx, kLeaf7EbxFsgsbase | kLeaf7EbxErms)
      << "SMEP, SMAP, AVX2, AVX-512, BMI... hidden";
  EXPECT_EQ(l7.ecx, 0u) << "PKU, OSPKE, UMIP hidden";
  EXPECT_TRUE(l7.edx & (1u << 26)) << "IBRS/IBPB kept so the guest can mitigate";
  EXPECT_FALSE(l7.edx & (1u << 8)) << "AVX512_VP2INTERSECT hidden";
  EXPECT_EQ(l7.eax, kAll) << "max subleaf kept";
  const auto& l7s1 = get(out, 0x7, 1);
  EXPECT_EQ(l7s1.eax | l7s1.ebx | l7s1.ecx | l7s1.edx, 0u);

  for (uint32_t i : {0u, 1u}) {
    const auto& x = get(out, 0xd, i);
    EXPECT_EQ(x.eax | x.ebx | x.ecx | x.edx, 0u) << "XSAVE leaf subleaf " << i;
  }
  EXPECT_FALSE(get(out, 0x80000001).ecx & kExt1EcxAbm) << "ABM/LZCNT hidden";
  EXPECT_EQ(get(out, 0x80000001).edx, kAll) << "NX, LM, SYSCALL... kept";
}

TEST(CpuidTest, InputTableIsNotModified) {
  auto in = all_bits_table();
  (void)normalize_cpuid(in, 3, 4, CpuTemplate::kBaseline);
  EXPECT_EQ(get(in, 0x1).ebx, kAll);
  EXPECT_EQ(get(in, 0x7, 0).ebx, kAll);
}

TEST(CpuidTest, ParseCpuTemplate) {
  auto host = parse_cpu_template("host");
  ASSERT_TRUE(host.ok());
  EXPECT_EQ(*host, CpuTemplate::kHost);
  auto base = parse_cpu_template("baseline");
  ASSERT_TRUE(base.ok());
  EXPECT_EQ(*base, CpuTemplate::kBaseline);
  EXPECT_STREQ(cpu_template_name(CpuTemplate::kBaseline), "baseline");
  EXPECT_STREQ(cpu_template_name(CpuTemplate::kHost), "host");
  for (const char* bad : {"", "Host", "base", "host ", "t2"}) {
    auto r = parse_cpu_template(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("host or baseline"), std::string::npos);
  }
}

}  // namespace
}  // namespace carapace
