// Everything needed to build a VM, as plain data (filled by the CLI, later by the API and pool).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "vmm/boot/cpu_boot_state.h"
#include "vmm/kvm/cpuid.h"
#include "vmm/machine/device_config.h"

namespace carapace {

enum class ConsoleKind { kStdio, kFile, kNone };

struct ConsoleConfig {
  ConsoleKind kind = ConsoleKind::kStdio;
  std::string path;        // for kFile
  uint64_t max_bytes = 0;  // kFile: at most this many bytes reach the file (0: no cap)
  bool input = false;      // feed stdin to the UART
};

struct MachineConfig {
  std::string kernel_path;
  std::string initrd_path;  // empty: none
  std::string cmdline;
  uint64_t mem_bytes = 128ull << 20;
  bool hugepages = false;  // advise guest RAM for transparent huge pages
  uint32_t vcpus = 1;
  CpuTemplate cpu_template = CpuTemplate::kHost;
  BootProtocol boot = BootProtocol::kLinux64;
  ConsoleConfig console;
  DeviceConfigs devices;
  std::optional<double> timeout_seconds;
};

}  // namespace carapace
