#include "vmm/boot/cpu_boot_state.h"

#include <cstring>

#include "vmm/boot/gdt.h"
#include "vmm/memory/layout.h"

namespace carapace {

namespace {

constexpr uint64_t kCr0Pe = 1ull << 0, kCr0Mp = 1ull << 1, kCr0Et = 1ull << 4, kCr0Ne = 1ull << 5,
                   kCr0Pg = 1ull << 31;
constexpr uint64_t kCr4Pae = 1ull << 5;
constexpr uint64_t kEferLme = 1ull << 8, kEferLma = 1ull << 10;

constexpr uint32_t kMsrSysenterCs = 0x174, kMsrSysenterEsp = 0x175, kMsrSysenterEip = 0x176;
constexpr uint32_t kMsrStar = 0xc0000081, kMsrLstar = 0xc0000082, kMsrCstar = 0xc0000083,
                   kMsrSyscallMask = 0xc0000084, kMsrKernelGsBase = 0xc0000102;
constexpr uint32_t kMsrMiscEnable = 0x1a0;
constexpr uint64_t kMiscEnableFastString = 1;
constexpr uint32_t kMsrMtrrDefType = 0x2ff;
constexpr uint64_t kMtrrEnableWriteBack = (1u << 11) | 6;

// LAPIC register offsets and LVT delivery modes (Intel SDM vol. 3, 10.5.1).
constexpr size_t kApicLvt0 = 0x350, kApicLvt1 = 0x360;
constexpr uint32_t kDeliveryExtInt = 7, kDeliveryNmi = 4;

uint32_t lapic_reg(const kvm_lapic_state& s, size_t off) {
  uint32_t v;
  std::memcpy(&v, s.regs + off, sizeof v);
  return v;
}
void set_lapic_reg(kvm_lapic_state& s, size_t off, uint32_t v) {
  std::memcpy(s.regs + off, &v, sizeof v);
}
uint32_t with_delivery_mode(uint32_t lvt, uint32_t mode) {
  return (lvt & ~0x700u) | (mode << 8);
}

void set_flat_segments(kvm_sregs& s, uint16_t code_selector) {
  auto table = gdt::boot_table();
  s.cs = gdt::segment_from_descriptor(table[code_selector / 8], code_selector);
  kvm_segment data =
      gdt::segment_from_descriptor(table[gdt::kDataSelector / 8], gdt::kDataSelector);
  s.ds = s.es = s.fs = s.gs = s.ss = data;
  s.tr = gdt::segment_from_descriptor(table[gdt::kTssSelector / 8], gdt::kTssSelector);
  s.gdt.base = layout::kGdtAddr;
  s.gdt.limit = static_cast<uint16_t>(sizeof(table) - 1);
  s.idt.base = layout::kIdtAddr;
  s.idt.limit = sizeof(uint64_t) - 1;
}

}  // namespace

Status setup_boot_vcpu(Vcpu& vcpu, const BootEntry& entry) {
  kvm_sregs s = TRY(vcpu.get_sregs());
  kvm_regs r{};
  r.rflags = 0x2;  // bit 1 is reserved and always set
  r.rip = entry.entry;
  if (entry.protocol == BootProtocol::kLinux64) {
    set_flat_segments(s, gdt::kCode64Selector);
    s.cr0 = kCr0Pe | kCr0Mp | kCr0Et | kCr0Ne | kCr0Pg;
    s.cr3 = entry.cr3;
    s.cr4 = kCr4Pae;
    s.efer = kEferLme | kEferLma;
    r.rsi = entry.boot_info;
    r.rsp = r.rbp = layout::kBootStackTop;
  } else {
    // PVH: 32-bit protected mode, paging off, flat segments, EBX = hvm_start_info.
    set_flat_segments(s, gdt::kCode32Selector);
    s.cr0 = kCr0Pe | kCr0Et;
    s.cr3 = 0;
    s.cr4 = 0;
    s.efer = 0;
    r.rbx = entry.boot_info;
  }
  TRY_STATUS(vcpu.set_sregs(s));
  TRY_STATUS(vcpu.set_regs(r));
  kvm_fpu fpu{};
  fpu.fcw = 0x37f;     // x87 default control word
  fpu.mxcsr = 0x1f80;  // SSE default: all exceptions masked
  return vcpu.set_fpu(fpu);
}

Status setup_vcpu_msrs(Vcpu& vcpu) {
  const MsrValue msrs[] = {
      {kMsrSysenterCs, 0},
      {kMsrSysenterEsp, 0},
      {kMsrSysenterEip, 0},
      {kMsrStar, 0},
      {kMsrCstar, 0},
      {kMsrKernelGsBase, 0},
      {kMsrSyscallMask, 0},
      {kMsrLstar, 0},
      {kMsrMiscEnable, kMiscEnableFastString},
      {kMsrMtrrDefType, kMtrrEnableWriteBack},
  };
  return vcpu.set_msrs(msrs);
}

Status setup_vcpu_lapic(Vcpu& vcpu) {
  kvm_lapic_state lapic = TRY(vcpu.get_lapic());
  // LINT0 takes the legacy PIC's ExtINT and LINT1 the NMI, as on a PC (MP spec 3.6.2.1).
  set_lapic_reg(lapic, kApicLvt0, with_delivery_mode(lapic_reg(lapic, kApicLvt0), kDeliveryExtInt));
  set_lapic_reg(lapic, kApicLvt1, with_delivery_mode(lapic_reg(lapic, kApicLvt1), kDeliveryNmi));
  return vcpu.set_lapic(lapic);
}

}  // namespace carapace
