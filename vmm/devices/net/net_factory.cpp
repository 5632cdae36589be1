#include "vmm/devices/net/net_factory.h"

#include <sys/random.h>

#include "common/base/log.h"
#include "vmm/devices/net/net_device.h"
#include "vmm/devices/net/tap_backend.h"
#include "vmm/devices/net/unix_backend.h"

namespace carapace {

namespace {

// A random locally administered unicast address (IEEE 802: bit 0 of the first byte clear for
// unicast, bit 1 set for "locally administered"), so it never collides with a vendor's.
Result<std::array<uint8_t, 6>> random_mac() {
  std::array<uint8_t, 6> mac;
  size_t got = 0;
  while (got < mac.size()) {
    ssize_t n = ::getrandom(mac.data() + got, mac.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return sys_error("virtio-net: getrandom");
    got += static_cast<size_t>(n);
  }
  mac[0] = static_cast<uint8_t>((mac[0] & 0xfc) | 0x02);
  return mac;
}

Result<std::unique_ptr<net::NetBackend>> open_backend(const NetDeviceConfig& config) {
  switch (config.backend) {
    case NetDeviceConfig::Backend::kTap:
      return std::unique_ptr<net::NetBackend>(TRY(net::TapBackend::open(config.tap_name)));
    case NetDeviceConfig::Backend::kUnixDatagram:
      return std::unique_ptr<net::NetBackend>(
          TRY(net::UnixDatagramBackend::open(config.unix_path)));
  }
  return as_invalid_input(make_error("virtio-net: unknown backend"));
}

}  // namespace

// The device takes its event loop from the transport at activation (ActivationContext::loop),
// like every virtio device, so `loop` is not needed here.
Result<std::shared_ptr<virtio::VirtioDevice>> make_net_device(const NetDeviceConfig& config,
                                                              EventLoop&) {
  NetDeviceConfig resolved = config;
  if (!resolved.mac_set) {
    resolved.mac = TRY(random_mac());
    resolved.mac_set = true;
  } else if ((resolved.mac[0] & 1) != 0 || resolved.mac == std::array<uint8_t, 6>{}) {
    return as_invalid_input(make_error("virtio-net: the MAC must be a non-zero unicast address"));
  }
  auto backend = TRY(open_backend(resolved));
  const auto& m = resolved.mac;
  LOG_INFO("virtio-net: %s, mac %02x:%02x:%02x:%02x:%02x:%02x, egress %s (%zu rules)",
           backend->describe(), m[0], m[1], m[2], m[3], m[4], m[5],
           resolved.egress_policy ? "deny" : "open", resolved.allow.size());
  return std::shared_ptr<virtio::VirtioDevice>(
      TRY(net::NetDevice::create(resolved, std::move(backend))));
}

}  // namespace carapace
