// The virtio-net wire format we use (virtio 1.2 §5.1.3, §5.1.4, §5.1.6). Written out here because
// <linux/virtio_net.h> does not parse as C++ (a struct field is named `class`);
// virtio_net_abi_check.c checks every value below against that header at build time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace carapace::net {

// Feature bits (virtio 1.2 §5.1.3).
inline constexpr unsigned kFCsum = 0;
inline constexpr unsigned kFGuestCsum = 1;
inline constexpr unsigned kFMac = 5;
inline constexpr unsigned kFMrgRxbuf = 15;
inline constexpr unsigned kFStatus = 16;
inline constexpr unsigned kFCtrlVq = 17;

// Configuration space (virtio 1.2 §5.1.4): mac at 0, status at 6.
inline constexpr size_t kConfigMacOffset = 0;
inline constexpr size_t kConfigStatusOffset = 6;
inline constexpr uint16_t kStatusLinkUp = 1;  // VIRTIO_NET_S_LINK_UP

// struct virtio_net_hdr_v1 (virtio 1.2 §5.1.6): little-endian, 12 bytes with VERSION_1.
struct VirtioNetHdr {
  uint8_t flags;
  uint8_t gso_type;
  uint16_t hdr_len;
  uint16_t gso_size;
  uint16_t csum_start;
  uint16_t csum_offset;
  uint16_t num_buffers;
};
static_assert(sizeof(VirtioNetHdr) == 12);
static_assert(offsetof(VirtioNetHdr, num_buffers) == 10);

inline constexpr uint8_t kHdrFNeedsCsum = 1;  // VIRTIO_NET_HDR_F_NEEDS_CSUM
inline constexpr uint8_t kGsoNone = 0;        // VIRTIO_NET_HDR_GSO_NONE

}  // namespace carapace::net
