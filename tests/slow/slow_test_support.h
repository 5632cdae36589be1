// Shared by the slow real-kernel tests: which kind of host this is, and the command line that
// lets a stock kernel boot on it.
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace carapace::testing {

// True on hosts with hardware virtualization (vmx/svm in /proc/cpuinfo). Without it, /dev/kvm
// here is PVM, which emulates guest CPL0 and cannot run user space (../shared/HOST-NOTES.md).
inline bool host_has_hardware_virtualization() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    std::string w;
    while (words >> w)
      if (w == "vmx" || w == "svm") return true;
  }
  return false;
}

// Inside tools/nested-kvm's L1 (CARAPACE_NESTED set) the KVM is kvm_amd on emulated SVM: the
// tests there exist to check the hardware expectations, so a host without vmx/svm is an error.
inline bool nested_harness() {
  const char* v = std::getenv("CARAPACE_NESTED");
  return v != nullptr && *v != '\0';
}

// The guest kernel's command line for `carapace run --cpu-template baseline`. On hosts that
// emulate guest CPL0 (PVM), CPUID is only partly virtualised: features KVM does not report
// (XSAVE, POPCNT, SMAP, SMEP, PKU, UMIP) leak through the baseline template, and the emulator
// lacks those instructions, so the kernel is told not to use them (HOST-NOTES).
inline std::string slow_kernel_cmdline(bool hw, const std::string& extra = "") {
  std::string cmdline = "console=ttyS0 reboot=k panic=-1 nopti mitigations=off";
  if (!extra.empty()) cmdline += " " + extra;
  if (!hw) cmdline += " noxsave clearcpuid=popcnt,smap,smep,pku,umip";
  return cmdline;
}

}  // namespace carapace::testing
