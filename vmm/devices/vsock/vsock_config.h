// A virtio-vsock device as plain data (`--vsock`, the pool, snapshot restore); vsock_factory.h
// builds the device from it.
#pragma once

#include <cstdint>
#include <string>

namespace carapace {

struct VsockDeviceConfig {
  uint32_t guest_cid = 3;
  std::string uds_path;  // host side: CONNECT <port> here; guest→host port P goes to <uds>_<P>
};

}  // namespace carapace
