// The smallest kernels the ELF loader accepts or refuses: one PT_LOAD segment of `code` at `paddr`
// and no notes (so no PVH entry), written to a file under the test's temporary folder. The same
// builder serves ELF64 and ELF32, whose headers differ only in field widths.
#pragma once

#include <elf.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

namespace carapace::testing {

// `Ehdr`/`Phdr`: Elf64_Ehdr/Elf64_Phdr with ELFCLASS64 and EM_X86_64, or the Elf32 pair with
// ELFCLASS32 and EM_386. Returns the file's path.
template <typename Ehdr, typename Phdr>
std::string write_one_segment_elf(const std::string& name, unsigned char elf_class,
                                  uint16_t machine, uint64_t paddr, const std::string& code) {
  using Addr = decltype(Phdr{}.p_paddr);
  using Size = decltype(Phdr{}.p_filesz);
  std::string path = ::testing::TempDir() + name;
  Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = elf_class;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = machine;
  eh.e_version = EV_CURRENT;
  eh.e_entry = static_cast<Addr>(paddr);
  eh.e_phoff = sizeof eh;
  eh.e_ehsize = sizeof eh;
  eh.e_phentsize = sizeof(Phdr);
  eh.e_phnum = 1;
  Phdr ph{};
  ph.p_type = PT_LOAD;
  ph.p_flags = PF_R | PF_X;
  ph.p_offset = sizeof eh + sizeof ph;
  ph.p_vaddr = ph.p_paddr = static_cast<Addr>(paddr);
  ph.p_filesz = ph.p_memsz = static_cast<Size>(code.size());
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(&eh), sizeof eh);
  f.write(reinterpret_cast<const char*>(&ph), sizeof ph);
  f.write(code.data(), static_cast<std::streamsize>(code.size()));
  return path;
}

}  // namespace carapace::testing
