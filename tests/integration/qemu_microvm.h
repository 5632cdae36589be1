// The QEMU command line the benches and the image tests compare against or boot with: the microvm
// machine without ACPI, default devices or a display, the console on `serial`. The caller appends
// the kernel, its command line and any drives.
#pragma once

#include <string>
#include <vector>

namespace carapace::testing {

// QEMU on KVM as the benches compare against it: the host's CPU without arch-capabilities.
inline const std::vector<std::string> kQemuKvmAccel = {"-accel", "kvm", "-cpu",
                                                       "max,-arch-capabilities"};
inline const std::vector<std::string> kQemuTcgAccel = {"-accel", "tcg"};

// `accel`: kQemuKvmAccel or kQemuTcgAccel.
inline std::vector<std::string> qemu_microvm_argv(const std::string& qemu,
                                                  const std::vector<std::string>& accel,
                                                  const std::string& mem_mib,
                                                  const std::string& serial) {
  std::vector<std::string> argv = {qemu, "-M", "microvm,acpi=off"};
  argv.insert(argv.end(), accel.begin(), accel.end());
  argv.insert(argv.end(), {"-m", mem_mib, "-nodefaults", "-no-user-config", "-display", "none",
                           "-serial", serial});
  return argv;
}

}  // namespace carapace::testing
