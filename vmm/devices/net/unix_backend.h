// UnixDatagramBackend: frames through a Unix datagram socket, so tests and test harnesses can
// be the "wire" without a TAP device or root. The contract (see README.md):
//   - the peer binds a SOCK_DGRAM socket at `peer_path` before the VM starts;
//   - the device binds its own socket at `peer_path + ".vm"` and connects it to `peer_path`;
//   - one datagram is one Ethernet frame, without any virtio header, in both directions;
//   - the kernel then accepts datagrams for the device only from the socket at `peer_path`
//     (a connected datagram socket refuses other senders with EPERM).
#pragma once

#include <sys/un.h>

#include <memory>
#include <string>

#include "common/base/unique_fd.h"
#include "vmm/devices/net/net_backend.h"

namespace carapace::net {

class UnixDatagramBackend : public NetBackend {
 public:
  static constexpr const char* kLocalSuffix = ".vm";
  static std::string local_path(const std::string& peer_path) { return peer_path + kLocalSuffix; }

  // Binds local_path(peer_path) (replacing a stale socket there, refusing a live one or a
  // non-socket) and connects to `peer_path`. No socket at `peer_path`, or a path too long for
  // sockaddr_un, is kInvalidInput.
  static Result<std::unique_ptr<UnixDatagramBackend>> open(const std::string& peer_path);
  ~UnixDatagramBackend() override;  // unlinks the bound path

  int fd() const override { return fd_.get(); }
  // A peer that went away and came back at the same path is reconnected here, once per send.
  Status send(std::span<const uint8_t> frame) override;
  Result<RecvResult> receive(std::span<uint8_t> buf) override;
  const char* describe() const override { return description_.c_str(); }

 private:
  UnixDatagramBackend(UniqueFd fd, const sockaddr_un& peer, std::string local)
      : fd_(std::move(fd)),
        peer_(peer),
        local_(std::move(local)),
        description_(std::string("unix ") + peer.sun_path) {}

  UniqueFd fd_;
  sockaddr_un peer_;
  std::string local_;
  std::string description_;
};

}  // namespace carapace::net
