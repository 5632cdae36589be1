// The QEMU command line the benches and the image tests compare against or boot with: the microvm
// machine without ACPI, default devices or a display, the console on `serial`. The caller appends
// the kernel, its command line and any drives.
#pragma once

#include <string>
#include <vector>

namespace carapace::testing {

// kKvm: QEMU on KVM as the benches compare against it, the host's CPU without
// arch-capabilities. kTcg: QEMU's own emulation.
enum class QemuAccel { kKvm, kTcg };

inline std::vector<std::string> qemu_microvm_argv(const std::string& qemu, QemuAccel accel,
                                                  const std::string& mem_mib,
                                                  const std::string& serial) {
  std::vector<std::string> argv = {qemu, "-M", "microvm,acpi=off"};
  if (accel == QemuAccel::kKvm)
    argv.insert(argv.end(), {"-accel", "kvm", "-cpu", "max,-arch-capabilities"});
  else
    argv.insert(argv.end(), {"-accel", "tcg"});
  argv.insert(argv.end(), {"-m", mem_mib, "-nodefaults", "-no-user-config", "-display", "none",
                           "-serial", serial});
  return argv;
}

}  // namespace carapace::testing
