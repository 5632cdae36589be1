// Fuzzes the kernel loader (vmm/boot/elf_loader): the bytes are the kernel image (a template's
// kernel path can name any file the daemon can read), loaded into fake guest RAM with a hole, so
// segments that straddle or miss RAM are tried too; an initrd is then placed above what loaded.
//
// Input: [flags:1][initrd_size:4] then the ELF image.
//   flags bit 0: ram_is_zeroed; bits 1-2: min_load_addr (1 MiB, 4 KiB, 0, 1 MiB);
//   bit 3: max_program_headers 4 instead of 64.
// A loaded kernel must lie inside RAM above min_load_addr, with an entry the protocol it names
// can reach; a placed initrd must lie inside RAM above the kernel.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/base/unique_fd.h"
#include "tests/fuzz/fuzz_memory.h"
#include "vmm/boot/elf_loader.h"
#include "vmm/boot/initrd.h"

using namespace carapace;
using carapace::fuzz::Input;

namespace {

// 1.5 MiB at 0 (the boot area below 1 MiB included), a hole, then 256 KiB at 2 MiB.
const GuestMemory& kernel_memory() {
  static GuestMemory* mem = [] {
    set_log_level(LogLevel::kError);
    auto m = GuestMemory::create_anonymous(
        {{GuestAddress(0), 0x180000}, {GuestAddress(0x200000), 0x40000}});
    if (!m.ok()) __builtin_trap();
    return new GuestMemory(std::move(m).value());
  }();
  return *mem;
}

// The image goes into a memfd: the loader reads with pread, as from the kernel file.
int image_fd() {
  static int fd = [] {
    int f = ::memfd_create("fuzz-kernel", MFD_CLOEXEC);
    if (f < 0) __builtin_trap();
    return f;
  }();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const uint8_t flags = in.take<uint8_t>();
  const uint64_t initrd_size = in.take<uint32_t>() % 0x200000;
  ElfLoadLimits limits;
  limits.ram_is_zeroed = flags & 1;
  static constexpr uint64_t kMinLoad[] = {0x100000, 0x1000, 0, 0x100000};
  limits.min_load_addr = kMinLoad[(flags >> 1) & 3];
  if (flags & 8) limits.max_program_headers = 4;

  const int fd = image_fd();
  if (::ftruncate(fd, 0) != 0) __builtin_trap();
  if (in.size() > 0 && ::pwrite(fd, in.data(), in.size(), 0) != static_cast<ssize_t>(in.size()))
    __builtin_trap();

  const GuestMemory& mem = kernel_memory();
  auto k = load_elf_kernel(fd, in.size(), mem, limits);
  if (!k.ok()) return 0;
  if (k->low >= k->high || k->low < limits.min_load_addr || k->high > mem.end_address())
    __builtin_trap();
  if (!mem.contains(GuestAddress(k->entry), 1) &&
      !(k->pvh_entry && mem.contains(GuestAddress(*k->pvh_entry), 1)))
    __builtin_trap();

  auto initrd = place_initrd(mem, initrd_size, k->high);
  if (!initrd.ok()) return 0;
  if (initrd->size != initrd_size || initrd->addr < k->high ||
      !mem.contains(GuestAddress(initrd->addr), initrd->size))
    __builtin_trap();
  return 0;
}
