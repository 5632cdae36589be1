// MachineState <-> state file sections: round trip, and every corrupt or hostile payload refused
// with an input error (docs/security.md #20, #22). Also the host CPU compatibility rules.
#include "snapshot/machine_state_codec.h"

#include <gtest/gtest.h>

#include <cstring>

#include "snapshot/cpu_compat.h"
#include "vmm/memory/ram_layout.h"

namespace carapace {
namespace {

kvm_cpuid_entry2 leaf(uint32_t fn, uint32_t ecx, uint32_t edx, uint32_t ebx = 0) {
  kvm_cpuid_entry2 e{};
  e.function = fn;
  e.ebx = ebx;
  e.ecx = ecx;
  e.edx = edx;
  return e;
}

MachineState make_state(uint32_t vcpus = 2) {
  MachineState s;
  s.ram = std::move(ram_regions(256ull << 20)).value();
  s.cpu_template = CpuTemplate::kBaseline;
  s.vm.pic_master.chip_id = KVM_IRQCHIP_PIC_MASTER;
  s.vm.pic_slave.chip_id = KVM_IRQCHIP_PIC_SLAVE;
  s.vm.ioapic.chip_id = KVM_IRQCHIP_IOAPIC;
  s.vm.pic_master.chip.pic.irq_base = 0x20;
  s.vm.ioapic.chip.ioapic.base_address = 0xfec00000;
  s.vm.pit.channels[0].count = 1193;
  s.vm.clock.clock = 123456789;
  for (uint32_t i = 0; i < vcpus; ++i) {
    VcpuState v;
    v.cpuid.entries() = {leaf(0, 0, 0), leaf(1, 0x80000001u, 0x1000 + i)};
    v.mp_state.mp_state = i == 0 ? KVM_MP_STATE_RUNNABLE : KVM_MP_STATE_HALTED;
    v.regs.rip = 0x100000 + i;
    v.regs.rsp = 0x8000;
    v.sregs.cr0 = 0x80050033;
    v.xsave.region[0] = 0x37f;
    v.xcrs.nr_xcrs = 1;
    v.xcrs.xcrs[0].value = 3;
    v.debugregs.dr7 = 0x400;
    v.lapic.regs[0x20] = static_cast<char>(i);
    v.msrs = {{0x10, 999 + i}, {0xc0000080, 0xd01}};
    v.events.exception.injected = 0;
    s.vcpus.push_back(v);
  }
  s.serial = Serial::State{1, 3, 8, 0x55, 0xc7, 12, 0, true};
  s.virtio = {{2, 1, {1, 2, 3}}, {0, 4, {9}}};
  return s;
}

bool same_bytes(const auto& a, const auto& b) {
  static_assert(sizeof(a) == sizeof(b));
  return std::memcmp(&a, &b, sizeof(a)) == 0;
}

// Encodes through the whole state file container and back.
Result<MachineState> through_file(const StateFile& f) {
  auto bytes = encode_state_file(f);
  if (!bytes.ok()) return bytes.take_error();
  auto decoded = decode_state_file(*bytes);
  if (!decoded.ok()) return decoded.take_error();
  return decode_machine_state(*decoded);
}

StateFile encoded(const MachineState& s) {
  auto f = encode_machine_state(s);
  EXPECT_TRUE(f.ok()) << f.error().describe();
  return std::move(f).value();
}

StateSection* find(StateFile& f, SectionType t, uint32_t index = 0) {
  for (auto& s : f.sections)
    if (s.type == static_cast<uint32_t>(t) && s.index == index) return &s;
  return nullptr;
}

void expect_refused(const StateFile& f, const std::string& needle) {
  auto r = decode_machine_state(f);
  ASSERT_FALSE(r.ok()) << "accepted a state that should fail with '" << needle << "'";
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
}

TEST(MachineStateCodec, RoundTrip) {
  MachineState s = make_state(3);
  auto back = through_file(encoded(s));
  ASSERT_TRUE(back.ok()) << back.error().describe();
  EXPECT_EQ(back->cpu_template, CpuTemplate::kBaseline);
  ASSERT_EQ(back->ram.size(), s.ram.size());
  EXPECT_EQ(back->ram[0].size, s.ram[0].size);
  EXPECT_TRUE(same_bytes(back->vm.pic_master, s.vm.pic_master));
  EXPECT_TRUE(same_bytes(back->vm.pic_slave, s.vm.pic_slave));
  EXPECT_TRUE(same_bytes(back->vm.ioapic, s.vm.ioapic));
  EXPECT_TRUE(same_bytes(back->vm.pit, s.vm.pit));
  EXPECT_EQ(back->vm.clock.clock, s.vm.clock.clock);
  ASSERT_EQ(back->vcpus.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const VcpuState& a = s.vcpus[i];
    const VcpuState& b = back->vcpus[i];
    ASSERT_EQ(b.cpuid.entries().size(), a.cpuid.entries().size());
    EXPECT_TRUE(same_bytes(b.cpuid.entries()[1], a.cpuid.entries()[1]));
    EXPECT_EQ(b.mp_state.mp_state, a.mp_state.mp_state);
    EXPECT_TRUE(same_bytes(b.regs, a.regs));
    EXPECT_TRUE(same_bytes(b.sregs, a.sregs));
    EXPECT_TRUE(same_bytes(b.xsave, a.xsave));
    EXPECT_TRUE(same_bytes(b.xcrs, a.xcrs));
    EXPECT_TRUE(same_bytes(b.debugregs, a.debugregs));
    EXPECT_TRUE(same_bytes(b.lapic, a.lapic));
    EXPECT_TRUE(same_bytes(b.events, a.events));
    ASSERT_EQ(b.msrs.size(), a.msrs.size());
    EXPECT_EQ(b.msrs[0].value, a.msrs[0].value);
  }
  EXPECT_EQ(back->serial.scr, 0x55);
  EXPECT_TRUE(back->serial.thr_empty_pending);
  // Opaque virtio blobs come back as given, in slot order.
  ASSERT_EQ(back->virtio.size(), 2u);
  EXPECT_EQ(back->virtio[0], (VirtioDeviceBlob{0, 4, {9}}));
  EXPECT_EQ(back->virtio[1], (VirtioDeviceBlob{2, 1, {1, 2, 3}}));
}

// docs/security.md #20: nothing stored twice: no machine-config section, the vCPU count is the
// number of vCPU sections, the template and RAM are the header's.
TEST(MachineStateCodec, StoresEachValueOnce) {
  StateFile f = encoded(make_state(2));
  EXPECT_EQ(find(f, SectionType::kMachineConfig), nullptr);
  EXPECT_EQ(f.cpu_template, "baseline");
  EXPECT_EQ(f.sections.size(), 1u + 2u + 1u + 2u);
}

TEST(MachineStateCodec, RefusesEveryTruncationOfEverySection) {
  const StateFile good = encoded(make_state(1));
  for (size_t k = 0; k < good.sections.size(); ++k) {
    if (good.sections[k].type == static_cast<uint32_t>(SectionType::kVirtioTransport)) continue;
    for (size_t cut : {size_t{0}, size_t{1}, good.sections[k].payload.size() / 2,
                       good.sections[k].payload.size() - 1}) {
      StateFile f = good;
      f.sections[k].payload.resize(cut);
      EXPECT_FALSE(decode_machine_state(f).ok()) << "section " << k << " cut to " << cut;
    }
    StateFile f = good;
    f.sections[k].payload.push_back(0);
    expect_refused(f, "trailing");
  }
}

TEST(MachineStateCodec, RefusesWrongSectionVersions) {
  for (SectionType t : {SectionType::kVm, SectionType::kVcpu, SectionType::kDevice}) {
    StateFile f = encoded(make_state(1));
    find(f, t)->version = 99;
    expect_refused(f, "section version 99, this carapace reads version 1");
  }
}

TEST(MachineStateCodec, RefusesMissingOrUnknownSections) {
  for (SectionType t : {SectionType::kVm, SectionType::kDevice, SectionType::kVcpu}) {
    StateFile f = encoded(make_state(1));
    std::erase_if(f.sections, [&](const StateSection& s) { return s.type == uint32_t(t); });
    EXPECT_FALSE(decode_machine_state(f).ok());
  }
  StateFile f = encoded(make_state(1));
  ASSERT_TRUE(f.add_section(SectionType::kFirstTest, 0, 1, {}).ok());
  expect_refused(f, "not known to this carapace");
  f = encoded(make_state(1));
  ASSERT_TRUE(f.add_section(SectionType::kMachineConfig, 0, 1, {}).ok());
  expect_refused(f, "not known to this carapace");
  f = encoded(make_state(1));
  ASSERT_TRUE(f.add_section(SectionType::kDevice, 7, 1, {}).ok());
  expect_refused(f, "not a known device");
}

TEST(MachineStateCodec, RefusesGapsInVcpuNumbers) {
  StateFile f = encoded(make_state(3));
  std::erase_if(f.sections, [](const StateSection& s) {
    return s.type == uint32_t(SectionType::kVcpu) && s.index == 1;
  });
  expect_refused(f, "not numbered 0..1");
  f = encoded(make_state(1));
  find(f, SectionType::kVcpu, 0)->index = 5000;
  expect_refused(f, "out of range");
}

// Counts that claim more items than the bytes left are refused before anything is allocated.
TEST(MachineStateCodec, RefusesOversizedCounts) {
  StateFile f = encoded(make_state(1));
  auto& p = find(f, SectionType::kVcpu)->payload;
  uint32_t huge = 0xffffffffu;
  std::memcpy(p.data(), &huge, 4);  // the CPUID entry count leads the vCPU payload
  EXPECT_FALSE(decode_machine_state(f).ok());
  uint32_t zero = 0;
  std::memcpy(p.data(), &zero, 4);
  EXPECT_FALSE(decode_machine_state(f).ok());
}

TEST(MachineStateCodec, RefusesOutOfRangeFields) {
  MachineState s = make_state(1);
  s.vcpus[0].mp_state.mp_state = 9;
  expect_refused(encoded(s), "mp state 9");
  s = make_state(1);
  s.vcpus[0].xcrs.nr_xcrs = 17;
  expect_refused(encoded(s), "xcrs");
  s = make_state(1);
  s.vcpus[0].msrs = {{0x10, 1}, {0x10, 2}};
  expect_refused(encoded(s), "twice");
  // A serial bool that is neither 0 nor 1.
  StateFile f = encoded(make_state(1));
  find(f, SectionType::kDevice)->payload.back() = 2;
  EXPECT_FALSE(decode_machine_state(f).ok());
}

TEST(MachineStateCodec, RefusesBadTemplateAndRamLayout) {
  StateFile f = encoded(make_state(1));
  f.cpu_template = "turbo";
  expect_refused(f, "unknown CPU template");
  f = encoded(make_state(1));
  f.memory.regions = {{GuestAddress(0), 8ull << 20}};
  expect_refused(f, "guest RAM");
  // RAM placed inside the MMIO hole.
  f = encoded(make_state(1));
  f.memory.regions = {{GuestAddress(0), 64ull << 20}, {GuestAddress(0xd0000000), 64ull << 20}};
  expect_refused(f, "layout");
}

TEST(MachineStateCodec, EncodeRefusesStatesDecodeWouldRefuse) {
  EXPECT_FALSE(encode_machine_state(make_state(0)).ok());
  MachineState s = make_state(1);
  s.virtio.push_back({2, 1, {}});  // slot 2 twice
  EXPECT_FALSE(encode_machine_state(s).ok());
}

// --- host CPU compatibility ---

CpuidTable host_supported() {
  return CpuidTable(
      {leaf(0, 0, 0), leaf(1, 0x00000001u, 0xffffffffu), leaf(7, 0x0, 0x0, 0x000000ffu)});
}

TEST(CpuCompat, SameHostIsCompatible) {
  CpuSignature here{"GenuineIntel", 6, 143, 8};
  MachineState s = make_state(1);
  s.cpu_template = CpuTemplate::kHost;
  EXPECT_TRUE(check_snapshot_cpu(here, s, here, host_supported()).ok());
  // Stepping alone does not matter.
  EXPECT_TRUE(check_snapshot_cpu({"GenuineIntel", 6, 143, 7}, s, here, host_supported()).ok());
}

TEST(CpuCompat, RefusesAnotherVendor) {
  MachineState s = make_state(1);
  auto r = check_snapshot_cpu({"AuthenticAMD", 25, 1, 1}, s, {"GenuineIntel", 6, 143, 8},
                              host_supported());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(r.error().message.find("AuthenticAMD"), std::string::npos);
}

TEST(CpuCompat, HostTemplateNeedsTheSameModelBaselineDoesNot) {
  MachineState s = make_state(1);
  CpuSignature there{"GenuineIntel", 6, 85, 4}, here{"GenuineIntel", 6, 143, 8};
  s.cpu_template = CpuTemplate::kHost;
  auto r = check_snapshot_cpu(there, s, here, host_supported());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--cpu-template baseline"), std::string::npos);
  s.cpu_template = CpuTemplate::kBaseline;
  EXPECT_TRUE(check_snapshot_cpu(there, s, here, host_supported()).ok());
}

TEST(CpuCompat, RefusesFeaturesTheHostLacks) {
  CpuSignature here{"GenuineIntel", 6, 143, 8};
  MachineState s = make_state(1);
  // Leaf 7 EBX bit 9 (ERMS) is not in the host's set (0xff).
  s.vcpus[0].cpuid.entries().push_back(leaf(7, 0, 0, 0x200));
  auto r = check_snapshot_cpu(here, s, here, host_supported());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("7.ebx"), std::string::npos) << r.error().message;
  // The bits the VMM sets itself (hypervisor, OSXSAVE, HTT) are not host features.
  s = make_state(1);
  s.vcpus[0].cpuid.entries()[1].ecx |= cpuid_bits::kLeaf1EcxHypervisor;
  EXPECT_TRUE(check_snapshot_cpu(here, s, here, host_supported()).ok());
}

}  // namespace
}  // namespace carapace
