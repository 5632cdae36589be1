// TapBackend: frames through a host TAP interface (/dev/net/tun, IFF_TAP | IFF_NO_PI |
// IFF_VNET_HDR). The TAP fd carries a 12-byte virtio_net_hdr before each frame
// (TUNSETVNETHDRSZ); with no offloads enabled (TUNSETOFFLOAD 0) the kernel hands us only whole,
// checksummed frames. The header we write is always zero (no checksum or segmentation request):
// nothing a guest puts in its own header reaches the host kernel's GSO code.
#pragma once

#include <memory>
#include <string>

#include "common/base/unique_fd.h"
#include "vmm/devices/net/net_backend.h"

namespace carapace::net {

class TapBackend : public NetBackend {
 public:
  // Attaches to the TAP interface `name` (created if it does not exist and we may create it).
  // A bad name is kInvalidInput; a missing /dev/net/tun, no permission or a busy interface are
  // host errors.
  static Result<std::unique_ptr<TapBackend>> open(const std::string& name);

  int fd() const override { return fd_.get(); }
  Status send(std::span<const uint8_t> frame) override;
  Result<RecvResult> receive(std::span<uint8_t> buf) override;
  const char* describe() const override { return description_.c_str(); }

 private:
  TapBackend(UniqueFd fd, std::string description)
      : fd_(std::move(fd)), description_(std::move(description)) {}

  UniqueFd fd_;
  std::string description_;
};

}  // namespace carapace::net
