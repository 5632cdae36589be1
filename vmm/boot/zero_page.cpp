#include "vmm/boot/zero_page.h"

#include <cstring>

namespace carapace {

namespace {
constexpr uint16_t kBootFlagMagic = 0xaa55;
constexpr uint32_t kHeaderMagic = 0x53726448;  // "HdrS"
constexpr uint8_t kLoaderUndefined = 0xff;     // no assigned boot loader id
constexpr uint32_t kKernelAlignment = 0x1000000;
}  // namespace

Result<boot_params> build_zero_page(const ZeroPageInputs& in) {
  boot_params bp;
  std::memset(&bp, 0, sizeof bp);
  if (in.e820.size() > E820_MAX_ENTRIES_ZEROPAGE)
    return make_error("e820 map has too many entries for the zero page");
  if (in.cmdline_addr > UINT32_MAX) return make_error("command line above 4 GiB");
  // ramdisk_image/ramdisk_size are 32-bit: the whole initrd, not just its start, must end at or
  // below 4 GiB.
  uint64_t initrd_end;
  if (__builtin_add_overflow(in.initrd.addr, in.initrd.size, &initrd_end) ||
      initrd_end > (uint64_t{1} << 32))
    return make_error("initrd must lie below 4 GiB and be smaller than 4 GiB");

  setup_header& h = bp.hdr;
  h.boot_flag = kBootFlagMagic;
  h.header = kHeaderMagic;
  h.type_of_loader = kLoaderUndefined;
  h.kernel_alignment = kKernelAlignment;
  h.loadflags = LOADED_HIGH;
  h.cmd_line_ptr = static_cast<uint32_t>(in.cmdline_addr);
  h.cmdline_size = static_cast<uint32_t>(in.cmdline_size);
  if (in.initrd.size > 0) {
    h.ramdisk_image = static_cast<uint32_t>(in.initrd.addr);
    h.ramdisk_size = static_cast<uint32_t>(in.initrd.size);
  }
  bp.e820_entries = static_cast<uint8_t>(in.e820.size());
  for (size_t i = 0; i < in.e820.size(); ++i) {
    bp.e820_table[i].addr = in.e820[i].addr;
    bp.e820_table[i].size = in.e820[i].size;
    bp.e820_table[i].type = static_cast<uint32_t>(in.e820[i].type);
  }
  return bp;
}

}  // namespace carapace
