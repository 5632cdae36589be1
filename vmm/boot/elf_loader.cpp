#include "vmm/boot/elf_loader.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/base/unique_fd.h"
#include "vmm/boot/elf_header.h"

namespace carapace {

namespace {

// Xen's note type for the 32-bit PVH entry point (xen/include/public/elfnote.h).
constexpr uint32_t kXenElfnotePhys32Entry = 18;

// [off, off+len) inside a file of `size` bytes, without overflow.
bool in_file(uint64_t off, uint64_t len, uint64_t size) {
  uint64_t end;
  return !__builtin_add_overflow(off, len, &end) && end <= size;
}

// Walks a PT_NOTE segment for the PVH entry note. Every step is bounded by the segment size.
// ELF32 and ELF64 notes share one layout (three 32-bit words, 4-byte padding on x86).
Result<std::optional<uint32_t>> find_pvh_entry(int fd, const ElfSegment& ph,
                                               const ElfLoadLimits& limits) {
  if (ph.filesz > limits.max_note_bytes) return make_error("kernel: note segment too large");
  std::vector<uint8_t> buf(ph.filesz);
  TRY_STATUS(read_exact(fd, ph.offset, buf.data(), buf.size()));
  size_t pos = 0;
  auto align4 = [](uint64_t v) { return (v + 3) & ~uint64_t{3}; };
  while (pos + sizeof(Elf64_Nhdr) <= buf.size()) {
    Elf64_Nhdr nh;
    std::memcpy(&nh, buf.data() + pos, sizeof nh);
    uint64_t name_off = pos + sizeof nh;
    uint64_t desc_off = name_off + align4(nh.n_namesz);
    uint64_t next = desc_off + align4(nh.n_descsz);
    if (next > buf.size()) return make_error("kernel: truncated ELF note");
    bool is_xen = nh.n_namesz == 4 && std::memcmp(buf.data() + name_off, "Xen", 4) == 0;
    if (is_xen && nh.n_type == kXenElfnotePhys32Entry) {
      if (nh.n_descsz != 4 && nh.n_descsz != 8) return make_error("kernel: bad PVH entry note");
      uint64_t entry = 0;
      std::memcpy(&entry, buf.data() + desc_off, nh.n_descsz);
      if (entry > UINT32_MAX) return make_error("kernel: PVH entry above 4 GiB");
      return std::optional<uint32_t>(static_cast<uint32_t>(entry));
    }
    pos = next;
  }
  return std::optional<uint32_t>();
}

}  // namespace

Result<LoadedKernel> load_elf_kernel(int fd, uint64_t file_size, const GuestMemory& mem,
                                     const ElfLoadLimits& limits) {
  ElfHeaders elf = TRY(read_elf_headers(fd, file_size, limits));
  const std::vector<ElfSegment>& phdrs = elf.segments;

  LoadedKernel out;
  out.elf64 = elf.elf64;
  struct Span {
    uint64_t start, end;
  };
  std::vector<Span> loaded;
  // First pass: validate every segment, so nothing is copied for a kernel that will be refused.
  for (const auto& ph : phdrs) {
    if (ph.type == PT_NOTE && ph.filesz > 0) {
      if (!in_file(ph.offset, ph.filesz, file_size))
        return make_error("kernel: note segment beyond end of file");
      auto pvh = TRY(find_pvh_entry(fd, ph, limits));
      if (pvh && !out.pvh_entry) out.pvh_entry = pvh;
      continue;
    }
    if (ph.type != PT_LOAD) continue;
    if (ph.filesz > ph.memsz) return make_error("kernel: segment file size exceeds memory size");
    if (!in_file(ph.offset, ph.filesz, file_size))
      return make_error("kernel: segment data beyond end of file");
    uint64_t end;
    if (__builtin_add_overflow(ph.paddr, ph.memsz, &end))
      return make_error("kernel: segment address range wraps");
    if (ph.memsz == 0) continue;
    if (ph.paddr < limits.min_load_addr)
      return make_error("kernel: segment below the 1 MiB boot area");
    if (!mem.contains(GuestAddress(ph.paddr), ph.memsz))
      return make_error("kernel: segment outside guest RAM (use a larger --mem?)");
    for (const auto& s : loaded)
      if (ph.paddr < s.end && s.start < end) return make_error("kernel: overlapping segments");
    loaded.push_back({ph.paddr, end});
    out.low = std::min(out.low, ph.paddr);
    out.high = std::max(out.high, end);
  }
  if (loaded.empty()) return make_error("kernel: no loadable segments");
  // An ELF32 kernel has no 64-bit entry; only the PVH note makes it bootable at all.
  if (!elf.elf64 && !out.pvh_entry)
    return make_error(
        "kernel: 32-bit ELF without a PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY): it cannot be "
        "booted");
  // A kernel must be enterable by at least one protocol; the caller checks the one it uses.
  if (!mem.contains(GuestAddress(elf.entry), 1) && !out.pvh_entry)
    return make_error("kernel: entry point outside guest RAM");
  if (out.pvh_entry && !mem.contains(GuestAddress(*out.pvh_entry), 1))
    return make_error("kernel: PVH entry point outside guest RAM");

  // Second pass: copy, and clear the rest of each segment unless RAM is known to be zero.
  for (const auto& ph : phdrs) {
    if (ph.type != PT_LOAD || ph.memsz == 0) continue;
    auto dst = TRY(mem.slice(GuestAddress(ph.paddr), ph.memsz));
    TRY_STATUS(read_exact(fd, ph.offset, dst.data(), ph.filesz));
    if (!limits.ram_is_zeroed) std::memset(dst.data() + ph.filesz, 0, ph.memsz - ph.filesz);
  }
  out.entry = elf.entry;
  return out;
}

Result<LoadedKernel> load_elf_kernel_file(const char* path, const GuestMemory& mem,
                                          const ElfLoadLimits& limits) {
  UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return sys_error(std::string("kernel: cannot open ") + path);
  struct stat st;
  if (::fstat(fd.get(), &st) < 0) return sys_error("kernel: stat");
  if (!S_ISREG(st.st_mode)) return make_error(std::string("kernel: not a regular file: ") + path);
  return load_elf_kernel(fd.get(), static_cast<uint64_t>(st.st_size), mem, limits);
}

}  // namespace carapace
