// The virtio devices of a VM, as plain data: filled by the CLI (`--drive`, `--net`, `--vsock`,
// `--rng`), later by the API, the pool and snapshot restore. Each device folder builds its device
// from its struct (vmm/devices/<name>/*_factory.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vmm/base/token_bucket.h"

namespace carapace {

struct BlockDeviceConfig {
  std::string path;          // raw image
  bool read_only = false;    // VIRTIO_BLK_F_RO; the image is opened O_RDONLY
  std::string overlay_path;  // copy-on-write: writes go here, `path` is only read
  std::string serial;        // GET_ID answer (at most 20 bytes); default derived from the path
  RateLimiter::Config limit;
};

// One allowlist entry of the egress policy: destination prefix, protocol and port.
struct EgressRule {
  enum class Protocol { kAny, kTcp, kUdp, kIcmp };
  bool ipv6 = false;
  std::array<uint8_t, 16> addr{};  // network byte order; IPv4 uses the first 4 bytes
  uint8_t prefix_len = 0;
  Protocol protocol = Protocol::kAny;
  uint16_t port = 0;  // 0: any port
};

struct NetDeviceConfig {
  enum class Backend { kTap, kUnixDatagram };
  Backend backend = Backend::kTap;
  std::string tap_name;   // kTap
  std::string unix_path;  // kUnixDatagram: the peer socket the device sends to / binds next to
  std::array<uint8_t, 6> mac{};
  bool mac_set = false;        // otherwise a locally administered MAC is generated
  bool egress_policy = false;  // true: deny everything but ARP and `allow`
  std::vector<EgressRule> allow;
  RateLimiter::Config rx_limit, tx_limit;
};

struct VsockDeviceConfig {
  uint32_t guest_cid = 3;
  std::string uds_path;  // host side: CONNECT <port> here; guest→host port P goes to <uds>_<P>
};

struct RngDeviceConfig {
  RateLimiter::Config limit;
};

struct DeviceConfigs {
  std::vector<BlockDeviceConfig> drives;
  std::vector<NetDeviceConfig> nets;
  std::optional<VsockDeviceConfig> vsock;
  std::optional<RngDeviceConfig> rng;
};

}  // namespace carapace
