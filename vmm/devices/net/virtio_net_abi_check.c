/* Build-time check of virtio_net_abi.h against the kernel's UAPI header, which only C can parse
 * (struct virtio_net_ctrl_hdr has a field named `class`). Compiles to nothing. */
#include <linux/virtio_net.h>
#include <stddef.h>

_Static_assert(VIRTIO_NET_F_CSUM == 0, "kFCsum");
_Static_assert(VIRTIO_NET_F_GUEST_CSUM == 1, "kFGuestCsum");
_Static_assert(VIRTIO_NET_F_MAC == 5, "kFMac");
_Static_assert(VIRTIO_NET_F_MRG_RXBUF == 15, "kFMrgRxbuf");
_Static_assert(VIRTIO_NET_F_STATUS == 16, "kFStatus");
_Static_assert(VIRTIO_NET_F_CTRL_VQ == 17, "kFCtrlVq");
_Static_assert(offsetof(struct virtio_net_config, mac) == 0, "kConfigMacOffset");
_Static_assert(offsetof(struct virtio_net_config, status) == 6, "kConfigStatusOffset");
_Static_assert(VIRTIO_NET_S_LINK_UP == 1, "kStatusLinkUp");
_Static_assert(sizeof(struct virtio_net_hdr_v1) == 12, "VirtioNetHdr size");
_Static_assert(offsetof(struct virtio_net_hdr_v1, gso_type) == 1, "gso_type");
_Static_assert(offsetof(struct virtio_net_hdr_v1, hdr_len) == 2, "hdr_len");
_Static_assert(offsetof(struct virtio_net_hdr_v1, gso_size) == 4, "gso_size");
_Static_assert(offsetof(struct virtio_net_hdr_v1, csum_start) == 6, "csum_start");
_Static_assert(offsetof(struct virtio_net_hdr_v1, csum_offset) == 8, "csum_offset");
_Static_assert(offsetof(struct virtio_net_hdr_v1, num_buffers) == 10, "num_buffers");
_Static_assert(VIRTIO_NET_HDR_F_NEEDS_CSUM == 1, "kHdrFNeedsCsum");
_Static_assert(VIRTIO_NET_HDR_GSO_NONE == 0, "kGsoNone");
