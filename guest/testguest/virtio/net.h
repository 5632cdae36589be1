// A virtio-net driver (virtio 1.2 §5.1): receiveq1 (queue 0) kept full of 2 KiB buffers, and
// transmitq1 (queue 1) fed from a pool of 2 KiB slots. Every frame carries the 12-byte
// virtio_net_hdr_v1 (VERSION_1 always has num_buffers), all zero: no offloads are negotiated.
#pragma once

#include <cstdint>

#include "guest/testguest/virtio/init.h"

namespace testguest::virtio {

inline constexpr uint64_t kNetFMac = 1ull << 5;
inline constexpr uint32_t kNetHdrBytes = 12;
// Header plus the largest frame without offloads (1514) fits; a multiple of 64.
inline constexpr uint32_t kNetBufBytes = 2048;
inline constexpr uint32_t kEthMax = kNetBufBytes - kNetHdrBytes;

class NetDriver {
 public:
  const char* init(const DeviceInfo& info, uint16_t queue_size = 32);

  // Queues one frame (copied) and notifies. False when every TX slot is still in flight after
  // waiting `timeout` cycles for one, or the frame is larger than a slot (use send_raw to try).
  bool send(const void* frame, uint32_t len, uint64_t timeout = kDeviceTimeout);
  // Sends a chain as given (header included by the caller), for oversized or odd frames. Returns
  // the used length, or -1 on timeout.
  int64_t send_raw(const Buf* bufs, int n, uint64_t timeout = kDeviceTimeout);
  // Waits until every queued frame has been taken by the device.
  bool flush_tx(uint64_t timeout = kDeviceTimeout);
  // The next received frame (Ethernet header onwards, without the virtio header): stays valid
  // until release(slot). A frame the device completed with a bad length has frame == nullptr.
  bool receive(const uint8_t*& frame, uint32_t& len, int& slot);
  // Gives an RX buffer back to the device.
  void release(int slot);

  Device dev;
  Virtqueue rx, tx;
  uint64_t offered = 0;
  uint64_t features = 0;
  uint8_t mac[6] = {};
  uint64_t frames_sent = 0, frames_received = 0;

 private:
  void reap_tx();

  void post_rx(uint16_t buffer);

  uint8_t* rx_bufs_ = nullptr;                       // rx.size() buffers
  uint16_t rx_buffer_of_[Virtqueue::kMaxSize] = {};  // per RX head: the buffer it carries
  uint8_t* tx_bufs_ = nullptr;                       // tx.size() slots, indexed by head
};

}  // namespace testguest::virtio
