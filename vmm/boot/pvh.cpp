#include "vmm/boot/pvh.h"

namespace carapace {

Result<uint64_t> write_pvh_start_info(const GuestMemory& mem, GuestAddress addr,
                                      uint64_t cmdline_addr, const InitrdPlacement& initrd,
                                      const std::vector<E820Entry>& e820) {
  // start info, then one module entry, then the memory map, each 8-byte aligned.
  if (e820.size() > kPvhMaxMemmapEntries) return make_error("PVH memory map has too many entries");
  // Check the whole area once, so the unchecked offsets below can neither wrap nor leave RAM and
  // a refusal writes nothing.
  const uint64_t area =
      sizeof(HvmStartInfo) + sizeof(HvmModlistEntry) + e820.size() * sizeof(HvmMemmapEntry);
  if (!mem.contains(addr, area)) return make_error("PVH start info does not fit in guest RAM");
  GuestAddress modlist = addr.unchecked_add(sizeof(HvmStartInfo));
  GuestAddress memmap = modlist.unchecked_add(sizeof(HvmModlistEntry));
  HvmStartInfo info{};
  info.magic = kHvmStartMagic;
  info.version = 1;
  info.cmdline_paddr = cmdline_addr;
  info.memmap_paddr = memmap.value;
  info.memmap_entries = static_cast<uint32_t>(e820.size());
  if (initrd.size > 0) {
    info.nr_modules = 1;
    info.modlist_paddr = modlist.value;
    HvmModlistEntry mod{initrd.addr, initrd.size, 0, 0};
    TRY_STATUS(mem.write_obj(modlist, mod));
  }
  for (size_t i = 0; i < e820.size(); ++i) {
    HvmMemmapEntry m{e820[i].addr, e820[i].size, static_cast<uint32_t>(e820[i].type), 0};
    TRY_STATUS(mem.write_obj(memmap.unchecked_add(i * sizeof m), m));
  }
  TRY_STATUS(mem.write_obj(addr, info));
  return addr.value;
}

}  // namespace carapace
