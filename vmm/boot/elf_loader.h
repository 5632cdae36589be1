// Loads an x86 ELF kernel (Linux vmlinux, the test guest, or an ELF32 kernel with a PVH note) into
// guest memory: every PT_LOAD segment at its physical address, each checked against guest RAM
// before a byte is copied.
#pragma once

#include <cstdint>
#include <optional>

#include "common/base/result.h"
#include "vmm/memory/guest_memory.h"

namespace carapace {

struct LoadedKernel {
  bool elf64 = true;                  // false: ELF32 (EM_386), bootable through PVH only
  uint64_t entry = 0;                 // ELF e_entry: the 64-bit Linux boot entry (ELF64)
  std::optional<uint32_t> pvh_entry;  // XEN_ELFNOTE_PHYS32_ENTRY, when the ELF has one
  uint64_t low = UINT64_MAX;          // lowest guest-physical byte loaded
  uint64_t high = 0;                  // one past the highest guest-physical byte loaded
};

struct ElfLoadLimits {
  // Segments may not start below this address: the boot structures live there.
  uint64_t min_load_addr = 0x100000;
  uint32_t max_program_headers = 64;
  uint32_t max_note_bytes = 64 * 1024;
  // RAM fresh from the kernel reads as zero: skip zero-filling p_memsz beyond p_filesz, which
  // would fault in every page of a large .bss for nothing. Clear it when RAM may hold old data.
  bool ram_is_zeroed = false;
};

// Parses the ELF in `fd` (`file_size` bytes) and copies its segments into `mem`. On any error
// nothing is reported as loaded; the caller discards the VM.
Result<LoadedKernel> load_elf_kernel(int fd, uint64_t file_size, const GuestMemory& mem,
                                     const ElfLoadLimits& limits = {});

// Opens `path` and loads it as above.
Result<LoadedKernel> load_elf_kernel_file(const char* path, const GuestMemory& mem,
                                          const ElfLoadLimits& limits = {});

}  // namespace carapace
