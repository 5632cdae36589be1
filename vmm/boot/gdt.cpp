#include "vmm/boot/gdt.h"

#include "vmm/memory/layout.h"

namespace carapace::gdt {

std::array<uint64_t, 6> boot_table() {
  return {
      0,
      descriptor(0xc09b, 0, 0xfffff),  // 32-bit code: present, DPL0, exec/read, 4 KiB gran, D=1
      descriptor(0xa09b, 0, 0xfffff),  // 64-bit code: as above with L=1, D=0
      descriptor(0xc093, 0, 0xfffff),  // data: present, DPL0, read/write, 4 KiB gran, B=1
      descriptor(0x008b, 0, 0x67),     // busy 64-bit TSS, low half (base 0)
      0,                               // TSS high half: base bits 63:32
  };
}

kvm_segment segment_from_descriptor(uint64_t entry, uint16_t selector) {
  kvm_segment s{};
  s.base = ((entry >> 16) & 0xffffff) | (((entry >> 56) & 0xff) << 24);
  uint32_t limit = (entry & 0xffff) | (((entry >> 48) & 0xf) << 16);
  s.g = (entry >> 55) & 1;
  // With 4 KiB granularity the limit counts pages; KVM wants the byte limit.
  s.limit = s.g ? (limit << 12) | 0xfff : limit;
  s.selector = selector;
  s.type = (entry >> 40) & 0xf;
  s.s = (entry >> 44) & 1;
  s.dpl = (entry >> 45) & 3;
  s.present = (entry >> 47) & 1;
  s.avl = (entry >> 52) & 1;
  s.l = (entry >> 53) & 1;
  s.db = (entry >> 54) & 1;
  s.unusable = s.present ? 0 : 1;
  return s;
}

// The IDT is written after the GDT: if they overlapped, it would overwrite GDT descriptors.
static_assert(layout::kGdtAddr + sizeof(decltype(boot_table())) <= layout::kIdtAddr);

Status write_boot_tables(const GuestMemory& mem) {
  auto table = boot_table();
  TRY_STATUS(mem.write_obj(GuestAddress(layout::kGdtAddr), table));
  return mem.write_obj(GuestAddress(layout::kIdtAddr), uint64_t{0});
}

}  // namespace carapace::gdt
