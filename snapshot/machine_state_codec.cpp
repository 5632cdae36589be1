#include "snapshot/machine_state_codec.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <type_traits>

#include "common/codec/byte_codec.h"
#include "vmm/kvm/kvm_uapi.h"
#include "vmm/memory/ram_layout.h"

namespace carapace {

namespace {

// KVM structures are stored as their uapi byte images: the x86-64 KVM ABI is little-endian and
// frozen, and the sizes below are pinned by the section versions. A header that changed size
// must break the build, not silently change the format.
static_assert(sizeof(kvm_regs) == 144);
static_assert(sizeof(kvm_sregs) == 312);
static_assert(sizeof(kvm_xsave) == 4096);
static_assert(sizeof(kvm_xcrs) == 392);
static_assert(sizeof(kvm_debugregs) == 128);
static_assert(sizeof(kvm_lapic_state) == 1024);
static_assert(sizeof(kvm_vcpu_events) == 64);
static_assert(sizeof(kvm_pit_state2) == 112);
static_assert(sizeof(kvm_cpuid_entry2) == 40);
static_assert(sizeof(kvm_irqchip::chip) == 512);

Error bad(const std::string& msg) {
  return as_invalid_input(make_error("snapshot state: " + msg));
}

template <typename T>
void put_raw(ByteWriter& w, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  w.bytes({reinterpret_cast<const uint8_t*>(&v), sizeof(T)});
}

template <typename T>
Status get_raw(ByteReader& r, const char* what, T& out) {
  static_assert(std::is_trivially_copyable_v<T>);
  auto b = TRY(r.bytes(what, sizeof(T)));
  std::memcpy(&out, b.data(), sizeof(T));
  return {};
}

std::string section_label(SectionType type, uint32_t index) {
  return section_type_name(static_cast<uint32_t>(type)) + " " + std::to_string(index);
}

// Wraps a payload decoder's error with the section it came from.
template <typename T>
Result<T> in_section(SectionType type, uint32_t index, Result<T> r) {
  if (r.ok()) return r;
  Error e = r.take_error();
  e.message = section_label(type, index) + ": " + e.message;
  return as_invalid_input(std::move(e));
}

Status check_version(const StateSection& s, uint32_t want) {
  if (s.version == want) return {};
  return bad(section_type_name(s.type) + " " + std::to_string(s.index) + ": section version " +
             std::to_string(s.version) + ", this carapace reads version " + std::to_string(want));
}

// --- VM: PIC master, PIC slave, IOAPIC (chip ids implied by position), PIT, kvmclock value ---

std::vector<uint8_t> encode_vm(const VmState& vm) {
  ByteWriter w;
  put_raw(w, vm.pic_master.chip);
  put_raw(w, vm.pic_slave.chip);
  put_raw(w, vm.ioapic.chip);
  put_raw(w, vm.pit);
  // Only the clock value: the rest of kvm_clock_data describes the source host's TSC and is not
  // applied on restore (apply_vm_state), so storing it would invite disagreement.
  w.u64(vm.clock.clock);
  return w.take();
}

Result<VmState> decode_vm(std::span<const uint8_t> payload) {
  ByteReader r(payload);
  VmState vm;
  vm.pic_master.chip_id = KVM_IRQCHIP_PIC_MASTER;
  vm.pic_slave.chip_id = KVM_IRQCHIP_PIC_SLAVE;
  vm.ioapic.chip_id = KVM_IRQCHIP_IOAPIC;
  TRY_STATUS(get_raw(r, "pic master", vm.pic_master.chip));
  TRY_STATUS(get_raw(r, "pic slave", vm.pic_slave.chip));
  TRY_STATUS(get_raw(r, "ioapic", vm.ioapic.chip));
  TRY_STATUS(get_raw(r, "pit", vm.pit));
  vm.clock.clock = TRY(r.u64("kvmclock"));
  TRY_STATUS(r.expect_end("vm section"));
  return vm;
}

// --- vCPU ---

std::vector<uint8_t> encode_vcpu(const VcpuState& v) {
  ByteWriter w;
  w.u32(static_cast<uint32_t>(v.cpuid.entries().size()));
  for (const auto& e : v.cpuid.entries())
    put_raw(w, e);
  w.u32(v.mp_state.mp_state);
  put_raw(w, v.regs);
  put_raw(w, v.sregs);
  put_raw(w, v.xsave);
  put_raw(w, v.xcrs);
  put_raw(w, v.debugregs);
  put_raw(w, v.lapic);
  w.u32(static_cast<uint32_t>(v.msrs.size()));
  for (const auto& m : v.msrs) {
    w.u32(m.index);
    w.u64(m.value);
  }
  put_raw(w, v.events);
  return w.take();
}

Result<VcpuState> decode_vcpu(std::span<const uint8_t> payload) {
  ByteReader r(payload);
  VcpuState v;
  uint32_t n = TRY(r.count("cpuid entries", sizeof(kvm_cpuid_entry2), kMaxSnapshotCpuidEntries));
  if (n == 0) return bad("no CPUID entries");
  v.cpuid.entries().resize(n);
  for (auto& e : v.cpuid.entries())
    TRY_STATUS(get_raw(r, "cpuid entry", e));
  v.mp_state.mp_state = TRY(r.u32("mp state"));
  // The states an x86 vCPU can be in (KVM_MP_STATE_RUNNABLE .. KVM_MP_STATE_SIPI_RECEIVED).
  if (v.mp_state.mp_state > KVM_MP_STATE_SIPI_RECEIVED)
    return bad("mp state " + std::to_string(v.mp_state.mp_state) + " is not an x86 vCPU state");
  TRY_STATUS(get_raw(r, "regs", v.regs));
  TRY_STATUS(get_raw(r, "sregs", v.sregs));
  TRY_STATUS(get_raw(r, "xsave", v.xsave));
  TRY_STATUS(get_raw(r, "xcrs", v.xcrs));
  if (v.xcrs.nr_xcrs > KVM_MAX_XCRS)
    return bad("xcrs: " + std::to_string(v.xcrs.nr_xcrs) + " registers, at most " +
               std::to_string(KVM_MAX_XCRS));
  TRY_STATUS(get_raw(r, "debugregs", v.debugregs));
  TRY_STATUS(get_raw(r, "lapic", v.lapic));
  uint32_t msrs = TRY(r.count("msrs", 12, kMaxSnapshotMsrs));
  v.msrs.reserve(msrs);
  std::set<uint32_t> seen;
  for (uint32_t i = 0; i < msrs; ++i) {
    MsrValue m{};
    m.index = TRY(r.u32("msr index"));
    m.value = TRY(r.u64("msr value"));
    if (!seen.insert(m.index).second) return bad("msr " + std::to_string(m.index) + " twice");
    v.msrs.push_back(m);
  }
  TRY_STATUS(get_raw(r, "vcpu events", v.events));
  TRY_STATUS(r.expect_end("vcpu section"));
  return v;
}

// --- serial (COM1) ---

std::vector<uint8_t> encode_serial(const Serial::State& s) {
  ByteWriter w;
  for (uint8_t b : {s.ier, s.lcr, s.mcr, s.scr, s.fcr, s.dll, s.dlm})
    w.u8(b);
  w.boolean(s.thr_empty_pending);
  return w.take();
}

Result<Serial::State> decode_serial(std::span<const uint8_t> payload) {
  ByteReader r(payload);
  Serial::State s{};
  // Register values need no range check here: Serial::restore masks them as if the guest had
  // written them (docs/security.md #22).
  s.ier = TRY(r.u8("ier"));
  s.lcr = TRY(r.u8("lcr"));
  s.mcr = TRY(r.u8("mcr"));
  s.scr = TRY(r.u8("scr"));
  s.fcr = TRY(r.u8("fcr"));
  s.dll = TRY(r.u8("dll"));
  s.dlm = TRY(r.u8("dlm"));
  s.thr_empty_pending = TRY(r.boolean("thr empty pending"));
  TRY_STATUS(r.expect_end("serial section"));
  return s;
}

// The RAM layout must be exactly what a VM of that size gets (ram_regions): a region elsewhere
// (inside the MMIO hole, over the IOAPIC) would put guest RAM where devices live.
Result<std::vector<RegionSpec>> decode_ram(const MemoryLayout& layout) {
  uint64_t total = layout.total_size();
  if (total < (16ull << 20)) return bad("guest RAM of " + std::to_string(total) + " bytes");
  auto want = ram_regions(total);
  if (!want.ok()) return bad("guest RAM: " + want.error().message);
  bool same = want->size() == layout.regions.size();
  for (size_t i = 0; same && i < want->size(); ++i)
    same = (*want)[i].start.value == layout.regions[i].start.value &&
           (*want)[i].size == layout.regions[i].size;
  if (!same)
    return bad("guest RAM layout is not the one carapace gives " + std::to_string(total >> 20) +
               " MiB");
  return layout.regions;
}

}  // namespace

Result<StateFile> encode_machine_state(const MachineState& state) {
  if (state.vcpus.empty() || state.vcpus.size() > kMaxSnapshotVcpus)
    return make_error("cannot snapshot a VM with " + std::to_string(state.vcpus.size()) + " vCPUs");
  if (state.virtio.size() > kMaxVirtioDevices) return make_error("too many virtio devices");
  StateFile f;
  f.cpu_template = cpu_template_name(state.cpu_template);
  f.memory.regions = state.ram;
  TRY_STATUS(f.add_section(SectionType::kVm, 0, kVmSectionVersion, encode_vm(state.vm)));
  for (uint32_t i = 0; i < state.vcpus.size(); ++i) {
    const auto& cpuid = state.vcpus[i].cpuid.entries();
    if (cpuid.empty() || cpuid.size() > kMaxSnapshotCpuidEntries ||
        state.vcpus[i].msrs.size() > kMaxSnapshotMsrs)
      return make_error("vCPU " + std::to_string(i) + ": CPUID or MSR list out of bounds");
    TRY_STATUS(
        f.add_section(SectionType::kVcpu, i, kVcpuSectionVersion, encode_vcpu(state.vcpus[i])));
  }
  TRY_STATUS(f.add_section(SectionType::kDevice, kSerialDeviceIndex, kSerialSectionVersion,
                           encode_serial(state.serial)));
  for (const auto& blob : state.virtio) {
    if (blob.bytes.size() > kMaxVirtioBlobBytes)
      return make_error("virtio slot " + std::to_string(blob.slot) + ": state too large");
    TRY_STATUS(f.add_section(SectionType::kVirtioTransport, blob.slot, blob.version, blob.bytes));
  }
  return f;
}

Result<MachineState> decode_machine_state(const StateFile& file) {
  MachineState state;
  auto tmpl = parse_cpu_template(file.cpu_template);
  if (!tmpl.ok()) return bad(tmpl.error().message);
  state.cpu_template = *tmpl;
  state.ram = TRY(decode_ram(file.memory));

  const StateSection* vm = nullptr;
  const StateSection* serial = nullptr;
  std::vector<const StateSection*> vcpus;
  for (const auto& s : file.sections) {
    switch (static_cast<SectionType>(s.type)) {
      case SectionType::kVm:
        vm = &s;  // (type, index) pairs are unique, so index 0 is the only one that can repeat
        if (s.index != 0) return bad("vm section with index " + std::to_string(s.index));
        break;
      case SectionType::kVcpu:
        if (s.index >= kMaxSnapshotVcpus)
          return bad("vcpu section index " + std::to_string(s.index) + " out of range");
        vcpus.push_back(&s);
        break;
      case SectionType::kDevice:
        if (s.index != kSerialDeviceIndex)
          return bad("device section index " + std::to_string(s.index) + " is not a known device");
        serial = &s;
        break;
      case SectionType::kVirtioTransport:
        if (state.virtio.size() >= kMaxVirtioDevices) return bad("too many virtio sections");
        if (s.payload.size() > kMaxVirtioBlobBytes)
          return bad("virtio " + std::to_string(s.index) + ": state too large");
        // The payload is the device set's to validate, as if the guest had written it.
        state.virtio.push_back({s.index, s.version, s.payload});
        break;
      default:
        // State this build does not know how to restore: running without it would be a
        // different machine, so refuse rather than skip.
        return bad("section " + section_type_name(s.type) + " " + std::to_string(s.index) +
                   " is not known to this carapace");
    }
  }
  if (!vm) return bad("no vm section");
  if (!serial) return bad("no serial device section");
  if (vcpus.empty()) return bad("no vcpu sections");
  std::sort(vcpus.begin(), vcpus.end(),
            [](const StateSection* a, const StateSection* b) { return a->index < b->index; });
  // Unique indices sorted: contiguous from 0 exactly when the last is n-1.
  if (vcpus.back()->index != vcpus.size() - 1)
    return bad("vcpu sections are not numbered 0.." + std::to_string(vcpus.size() - 1));

  TRY_STATUS(check_version(*vm, kVmSectionVersion));
  state.vm = TRY(in_section(SectionType::kVm, 0, decode_vm(vm->payload)));
  for (const StateSection* s : vcpus) {
    TRY_STATUS(check_version(*s, kVcpuSectionVersion));
    state.vcpus.push_back(TRY(in_section(SectionType::kVcpu, s->index, decode_vcpu(s->payload))));
  }
  TRY_STATUS(check_version(*serial, kSerialSectionVersion));
  state.serial =
      TRY(in_section(SectionType::kDevice, kSerialDeviceIndex, decode_serial(serial->payload)));
  std::sort(state.virtio.begin(), state.virtio.end(),
            [](const VirtioDeviceBlob& a, const VirtioDeviceBlob& b) { return a.slot < b.slot; });
  return state;
}

}  // namespace carapace
