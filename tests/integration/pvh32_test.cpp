// ELF32 kernels over KVM: the freestanding 32-bit PVH guest boots with `--boot pvh` (its marker on
// the console, exit 0 through the i8042 reset); the Linux 64-bit entry refuses any ELF32, and an
// ELF32 without a PVH note is refused whatever the protocol, each as one usage-error line.
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/integration/testguest_harness.h"
#include "tests/integration/tiny_elf.h"

namespace carapace::testing {
namespace {

std::string pvh32_image() {
  return CARAPACE_PVH32_GUEST;
}

// An ELF32 (EM_386) with one PT_LOAD of `jmp $` at 2 MiB and no notes.
std::string write_elf32_without_note() {
  return write_one_segment_elf<Elf32_Ehdr, Elf32_Phdr>("nonote32.elf", ELFCLASS32, EM_386, 2u << 20,
                                                       std::string("\xeb\xfe", 2));
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
