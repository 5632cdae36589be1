#include "vmm/machine/clone_identity.h"

#include <string>

namespace carapace {

uint32_t mac_low24(const std::array<uint8_t, 6>& mac) {
  return (uint32_t{mac[3]} << 16) | (uint32_t{mac[4]} << 8) | mac[5];
}

MachineConfig clone_identity(const MachineConfig& base, uint32_t i) {
  MachineConfig c = base;
  const std::string suffix = "." + std::to_string(i);
  if (c.console.kind == ConsoleKind::kFile) c.console.path += suffix;
  if (c.devices.vsock) {
    c.devices.vsock->guest_cid += i;
    c.devices.vsock->uds_path += suffix;
  }
  for (auto& n : c.devices.nets) {
    if (n.backend == NetDeviceConfig::Backend::kTap)
      n.tap_name += suffix;
    else
      n.unix_path += suffix;
    if (n.mac_set) {
      uint32_t low = mac_low24(n.mac) + i;
      n.mac[3] = static_cast<uint8_t>(low >> 16);
      n.mac[4] = static_cast<uint8_t>(low >> 8);
      n.mac[5] = static_cast<uint8_t>(low);
    }
  }
  for (auto& drive : c.devices.drives)
    if (!drive.overlay_path.empty()) drive.overlay_path += suffix;
  return c;
}

}  // namespace carapace
