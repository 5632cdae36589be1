// ELF32 kernels over KVM: the freestanding 32-bit PVH guest boots with `--boot pvh` (its marker on
// the console, exit 0 through the i8042 reset); the Linux 64-bit entry refuses any ELF32, and an
// ELF32 without a PVH note is refused whatever the protocol, each as one usage-error line.
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "tests/integration/testguest_harness.h"

namespace carapace::testing {
namespace {

std::string pvh32_image() {
  return CARAPACE_PVH32_GUEST;
}

// An ELF32 (EM_386) with one PT_LOAD of `jmp $` at 2 MiB and no notes.
std::string write_elf32_without_note() {
  std::string path = ::testing::TempDir() + "nonote32.elf";
  const char code[] = "\xeb\xfe";
  Elf32_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS32;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = EM_386;
  eh.e_version = EV_CURRENT;
  eh.e_entry = 2u << 20;
  eh.e_phoff = sizeof eh;
  eh.e_ehsize = sizeof eh;
  eh.e_phentsize = sizeof(Elf32_Phdr);
  eh.e_phnum = 1;
  Elf32_Phdr ph{};
  ph.p_type = PT_LOAD;
  ph.p_flags = PF_R | PF_X;
  ph.p_offset = sizeof eh + sizeof ph;
  ph.p_vaddr = ph.p_paddr = 2u << 20;
  ph.p_filesz = ph.p_memsz = 2;
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(&eh), sizeof eh);
  f.write(reinterpret_cast<const char*>(&ph), sizeof ph);
  f.write(code, 2);
  return path;
}

ProcessResult run_kernel(const std::string& kernel, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {carapace_binary(), "run", "--kernel", kernel, "--timeout", "50"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return run_process(argv, std::chrono::seconds(60));
}

void expect_one_line_refusal(const ProcessResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << describe(r);
  EXPECT_NE(r.err.find(needle), std::string::npos) << describe(r);
}

TEST(Pvh32Test, Elf32PvhGuestBootsAndPrintsItsMarker) {
  ASSERT_TRUE(kvm_usable());
  auto r = run_kernel(pvh32_image(), {"--boot", "pvh"});
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(has_line(r.out, "pvh32-ok")) << describe(r);
}

TEST(Pvh32Test, Elf32IsRefusedByTheLinux64Entry) {
  ASSERT_TRUE(kvm_usable());
  expect_one_line_refusal(run_kernel(pvh32_image(), {"--boot", "elf"}),
                          "32-bit ELF cannot use the Linux 64-bit entry");
  expect_one_line_refusal(run_kernel(pvh32_image(), {}),
                          "32-bit ELF cannot use the Linux 64-bit entry");
}

TEST(Pvh32Test, Elf32WithoutPvhNoteIsRefused) {
  ASSERT_TRUE(kvm_usable());
  const std::string nonote = write_elf32_without_note();
  for (const char* boot : {"elf", "pvh"}) {
    SCOPED_TRACE(boot);
    expect_one_line_refusal(run_kernel(nonote, {"--boot", boot}),
                            "32-bit ELF without a PVH entry note");
  }
}

}  // namespace
}  // namespace carapace::testing
