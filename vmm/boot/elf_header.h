// The ELF header and program headers of a kernel, read and checked in one class-independent
// form: the PVH boot protocol enters ELF32 and ELF64 kernels alike, and everything after the
// header (segment bounds, notes) is the same check for both.
#pragma once

#include <cstdint>
#include <vector>

#include "common/base/result.h"

namespace carapace {

struct ElfLoadLimits;

// One program header, widened to 64 bits.
struct ElfSegment {
  uint32_t type = 0;
  uint64_t offset = 0;
  uint64_t paddr = 0;
  uint64_t filesz = 0;
  uint64_t memsz = 0;
};

struct ElfHeaders {
  bool elf64 = true;  // ELFCLASS64 with EM_X86_64; false: ELFCLASS32 with EM_386
  uint64_t entry = 0;
  std::vector<ElfSegment> segments;
};

// Reads the ELF header and every program header of the `file_size`-byte file in `fd`: magic,
// class (32 or 64), little-endian, machine for that class, ET_EXEC, program header entry size,
// count within limits and the table inside the file (no overflow).
Result<ElfHeaders> read_elf_headers(int fd, uint64_t file_size, const ElfLoadLimits& limits);

// pread() of exactly `len` bytes at `offset`, retried on EINTR; end of file is an error.
Status read_exact(int fd, uint64_t offset, void* dst, uint64_t len);

}  // namespace carapace
