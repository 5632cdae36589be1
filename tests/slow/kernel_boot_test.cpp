// The real guest kernel (tools/build-kernel) booted by `carapace run` with the marker initramfs
// (tools/build-initramfs). On a host with hardware virtualization its /init prints the marker and
// reboots. On a host that emulates CPL0 (PVM, see ../shared/HOST-NOTES.md) the kernel gets as far
// as starting init, and user space cannot run; there the test checks the banner, our exact command
// line and "Run /init as init process".
#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/integration/process_runner.h"
#include "tests/integration/testguest_harness.h"
#include "tests/slow/slow_test_support.h"

namespace carapace::testing {
namespace {

TEST(KernelBootSlow, RealKernelBootsUnderCarapace) {
  const std::string vmlinux = CARAPACE_GUEST_DIR "/vmlinux";
  const std::string initramfs = CARAPACE_GUEST_DIR "/initramfs-marker.cpio.gz";
  ASSERT_EQ(access("/dev/kvm", R_OK | W_OK), 0) << "/dev/kvm is needed";
  ASSERT_EQ(access(vmlinux.c_str(), R_OK), 0) << vmlinux << " missing: run tools/build-kernel";
  ASSERT_EQ(access(initramfs.c_str(), R_OK), 0)
      << initramfs << " missing: run tools/build-initramfs";

  const bool hw = host_has_hardware_virtualization();
  ASSERT_TRUE(hw || !nested_harness()) << "CARAPACE_NESTED is set but this host has no vmx/svm";
  const std::string cmdline = slow_kernel_cmdline(hw);
  auto r = run_process(
      {carapace_binary(), "run", "--kernel", vmlinux, "--initrd", initramfs, "--cmdline", cmdline,
       "--cpu-template", "baseline", "--mem", "256", "--timeout", "175"},
      std::chrono::seconds(190));
  ASSERT_FALSE(r.timed_out) << describe(r);
  EXPECT_NE(r.out.find("Linux version 6.12"), std::string::npos) << describe(r);
  // Exactly our command line: the console line ends right after it (Linux's console writes \r\n).
  EXPECT_NE(r.out.find("Command line: " + cmdline + "\r\n"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("Run /init as init process"), std::string::npos) << describe(r);
  if (hw) {
    EXPECT_TRUE(has_line(r.out, "CARAPACE-INIT-MARKER ok")) << describe(r);
    EXPECT_EQ(r.exit_code, 0) << describe(r);
  } else {
    // Emulated CPL0: init cannot run, so the run ends in a panic-reboot (exit 0) or the timeout.
    std::cout << "[ host without vmx/svm: checked the boot up to starting init ]" << std::endl;
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 5) << describe(r);
  }
}

}  // namespace
}  // namespace carapace::testing
