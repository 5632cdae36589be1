#include "vmm/devices/net/tap_backend.h"

#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

namespace carapace::net {

Result<std::unique_ptr<TapBackend>> TapBackend::open(const std::string& name) {
  if (name.empty() || name.size() >= IFNAMSIZ || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos)
    return as_invalid_input(make_error("virtio-net: bad TAP interface name '" + name + "'"));
  int raw = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (raw < 0) return sys_error("virtio-net: open /dev/net/tun");
  UniqueFd fd(raw);
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, name.data(), name.size());
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
  if (::ioctl(fd.get(), TUNSETIFF, &ifr) < 0)
    return sys_error("virtio-net: TUNSETIFF " + name +
                     " (does it exist, is it in use, are we root?)");
  int hdr_len = static_cast<int>(kVnetHdrLen);
  if (::ioctl(fd.get(), TUNSETVNETHDRSZ, &hdr_len) < 0)
    return sys_error("virtio-net: TUNSETVNETHDRSZ " + name);
  // No checksum or segmentation offload toward us: we offer none to the guest either.
  if (::ioctl(fd.get(), TUNSETOFFLOAD, 0ul) < 0)
    return sys_error("virtio-net: TUNSETOFFLOAD " + name);
  return std::unique_ptr<TapBackend>(new TapBackend(std::move(fd), "tap " + name));
}

Status TapBackend::send(std::span<const uint8_t> frame) {
  VirtioNetHdr hdr{};  // no offload requests (virtio 1.2 §5.1.6)
  iovec iov[2] = {{&hdr, kVnetHdrLen}, {const_cast<uint8_t*>(frame.data()), frame.size()}};
  for (;;) {
    ssize_t n = ::writev(fd_.get(), iov, 2);
    if (n >= 0) return {};
    if (errno != EINTR) return sys_error("virtio-net: write to TAP");
  }
}

Result<RecvResult> TapBackend::receive(std::span<uint8_t> buf) {
  VirtioNetHdr hdr{};
  iovec iov[2] = {{&hdr, kVnetHdrLen}, {buf.data(), buf.size()}};
  ssize_t n;
  do {
    n = ::readv(fd_.get(), iov, 2);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return RecvResult{};
    return sys_error("virtio-net: read from TAP");
  }
  if (static_cast<size_t>(n) < kVnetHdrLen) return RecvResult{RecvResult::Kind::kInvalid, 0};
  // Without TUNSETOFFLOAD the kernel segments and checksums for us; a GSO packet here would be a
  // kernel surprise the guest did not negotiate, so it is dropped, not passed on.
  if (hdr.gso_type != kGsoNone)
    return RecvResult{RecvResult::Kind::kInvalid, static_cast<size_t>(n) - kVnetHdrLen};
  return RecvResult{RecvResult::Kind::kFrame, static_cast<size_t>(n) - kVnetHdrLen};
}

}  // namespace carapace::net
