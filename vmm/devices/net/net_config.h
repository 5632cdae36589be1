// A virtio-net device as plain data (`--net`, snapshot restore); net_factory.h builds the device
// from it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/base/token_bucket.h"

namespace carapace {

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

}  // namespace carapace
