// Each clone of one snapshot gets an identity of its own, so clones never collide on a socket, a
// tap, a MAC or an overlay file: used by `carapace restore --clones N` and by the control API's
// fork alike.
#pragma once

#include <array>
#include <cstdint>

#include "vmm/machine/machine_config.h"

namespace carapace {

// Clone `i` of `base` (fork numbers its children from 1 so that none takes the parent's identity):
//   vsock       cid C+i, uds P.<i>
//   net         unix P.<i> / tap T.<i>; a given MAC: + i in its low 24 bits
//   overlay     F.<i>
//   file console P.<i>
MachineConfig clone_identity(const MachineConfig& base, uint32_t i);
// The low 24 bits of a MAC, where the clone number is added.
uint32_t mac_low24(const std::array<uint8_t, 6>& mac);

}  // namespace carapace
