#include "vmm/boot/elf_header.h"

#include <elf.h>
#include <unistd.h>

#include <cstring>

#include "vmm/boot/elf_loader.h"

namespace carapace {

namespace {

// [off, off+len) inside a file of `size` bytes, without overflow.
bool in_file(uint64_t off, uint64_t len, uint64_t size) {
  uint64_t end;
  return !__builtin_add_overflow(off, len, &end) && end <= size;
}

// The same checks for both classes; `Ehdr`/`Phdr` pick the layout, `machine` the one CPU
// architecture that layout may name.
template <typename Ehdr, typename Phdr>
Result<ElfHeaders> read_class(int fd, uint64_t file_size, const ElfLoadLimits& limits,
                              uint16_t machine, const char* not_machine) {
  if (file_size < sizeof(Ehdr)) return make_error("kernel: file too small to be an ELF");
  Ehdr eh;
  TRY_STATUS(read_exact(fd, 0, &eh, sizeof eh));
  if (eh.e_machine != machine) return make_error(not_machine);
  if (eh.e_type != ET_EXEC) return make_error("kernel: not an executable ELF (ET_EXEC)");
  if (eh.e_phentsize != sizeof(Phdr)) return make_error("kernel: bad program header entry size");
  if (eh.e_phnum == 0) return make_error("kernel: no program headers");
  if (eh.e_phnum > limits.max_program_headers)
    return make_error("kernel: too many program headers");
  if (!in_file(eh.e_phoff, uint64_t(eh.e_phnum) * sizeof(Phdr), file_size))
    return make_error("kernel: program headers beyond end of file");
  std::vector<Phdr> raw(eh.e_phnum);
  TRY_STATUS(read_exact(fd, eh.e_phoff, raw.data(), raw.size() * sizeof(Phdr)));
  ElfHeaders out;
  out.elf64 = sizeof(Ehdr) == sizeof(Elf64_Ehdr);
  out.entry = eh.e_entry;
  out.segments.reserve(raw.size());
  for (const Phdr& p : raw)
    out.segments.push_back({p.p_type, p.p_offset, p.p_paddr, p.p_filesz, p.p_memsz});
  return out;
}

}  // namespace

Status read_exact(int fd, uint64_t offset, void* dst, uint64_t len) {
  auto* p = static_cast<uint8_t*>(dst);
  while (len > 0) {
    ssize_t n = ::pread(fd, p, len, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("kernel: read");
    if (n == 0) return make_error("kernel: unexpected end of file");
    p += n;
    offset += n;
    len -= n;
  }
  return {};
}

Result<ElfHeaders> read_elf_headers(int fd, uint64_t file_size, const ElfLoadLimits& limits) {
  unsigned char ident[EI_NIDENT];
  if (file_size < sizeof ident) return make_error("kernel: file too small to be an ELF");
  TRY_STATUS(read_exact(fd, 0, ident, sizeof ident));
  if (std::memcmp(ident, ELFMAG, SELFMAG) != 0) return make_error("kernel: not an ELF file");
  if (ident[EI_DATA] != ELFDATA2LSB) return make_error("kernel: not little-endian");
  if (ident[EI_CLASS] == ELFCLASS64)
    return read_class<Elf64_Ehdr, Elf64_Phdr>(fd, file_size, limits, EM_X86_64,
                                              "kernel: not an x86-64 ELF (ELF64 needs EM_X86_64)");
  if (ident[EI_CLASS] == ELFCLASS32)
    return read_class<Elf32_Ehdr, Elf32_Phdr>(fd, file_size, limits, EM_386,
                                              "kernel: not an i386 ELF (ELF32 needs EM_386)");
  return make_error("kernel: not a 32- or 64-bit ELF");
}

}  // namespace carapace
