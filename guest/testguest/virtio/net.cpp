#include "guest/testguest/virtio/net.h"

#include "guest/testguest/cpu.h"
#include "guest/testguest/virtio/dma.h"

extern "C" void* memset(void* dest, int value, size_t n);

namespace testguest::virtio {

const char* NetDriver::init(const DeviceInfo& info, uint16_t queue_size) {
  dev = Device(info);
  Virtqueue* queues[2] = {&rx, &tx};
  // init_device takes an array of queues; ours are two members, so set them up by hand.
  offered = dev.begin_init();
  features = dev.negotiate(offered, kNetFMac);
  if (!features) return "virtio-net refused FEATURES_OK";
  for (uint16_t i = 0; i < 2; ++i) {
    if (const char* e = queues[i]->setup(dev, i, queue_size)) return e;
  }
  if (!rx_bufs_) {
    rx_bufs_ = static_cast<uint8_t*>(dma_alloc(uint64_t{kNetBufBytes} * Virtqueue::kMaxSize, 4096));
    tx_bufs_ = static_cast<uint8_t*>(dma_alloc(uint64_t{kNetBufBytes} * Virtqueue::kMaxSize, 4096));
    if (!rx_bufs_ || !tx_bufs_) return "out of DMA memory";
  }
  // Fill the receive queue (virtio 1.2 §5.1.5); published now, notified after DRIVER_OK.
  for (uint16_t i = 0; i < rx.size(); ++i)
    post_rx(i);
  rx.publish_avail_idx(rx.avail_idx());
  dev.driver_ok();
  if (features & kNetFMac) {
    const uint32_t lo = dev.config32(0);
    const uint16_t hi = dev.config16(4);
    for (int i = 0; i < 4; ++i)
      mac[i] = static_cast<uint8_t>(lo >> (8 * i));
    mac[4] = static_cast<uint8_t>(hi);
    mac[5] = static_cast<uint8_t>(hi >> 8);
  }
  rx.kick();  // the buffers were published before DRIVER_OK; tell the device they are there
  if (dev.status() & kStatusNeedsReset) return "DEVICE_NEEDS_RESET right after DRIVER_OK";
  return nullptr;
}

void NetDriver::reap_tx() {
  uint32_t head, len;
  while (tx.pop_used(head, len)) {
  }
}

bool NetDriver::send(const void* frame, uint32_t len, uint64_t timeout) {
  if (len > kEthMax) return false;
  Deadline deadline(timeout);
  uint16_t ids[1];
  int head;
  for (;;) {
    reap_tx();
    head = tx.take_chain(1, ids);
    if (head >= 0) break;
    if (deadline.expired()) return false;
    cpu_relax();
  }
  uint8_t* slot = tx_bufs_ + uint64_t{kNetBufBytes} * head;
  memset(slot, 0, kNetHdrBytes);
  copy_bytes(slot + kNetHdrBytes, frame, len);
  tx.desc(ids[0]) = Desc{phys(slot), kNetHdrBytes + len, 0, 0};
  tx.push_avail(static_cast<uint16_t>(head));
  tx.kick();
  ++frames_sent;
  return true;
}

int64_t NetDriver::send_raw(const Buf* bufs, int n, uint64_t timeout) {
  if (!flush_tx(timeout)) return -1;
  return tx.submit_and_wait(bufs, n, timeout);
}

bool NetDriver::flush_tx(uint64_t timeout) {
  Deadline deadline(timeout);
  for (;;) {
    reap_tx();
    if (tx.in_flight() == 0) return true;
    if (deadline.expired()) return false;
    cpu_relax();
  }
}

bool NetDriver::receive(const uint8_t*& frame, uint32_t& len, int& slot) {
  uint32_t head, used;
  if (!rx.pop_used(head, used)) return false;
  slot = head < rx.size() ? rx_buffer_of_[head] : -1;  // -1: a head we never gave out
  if (slot < 0 || used < kNetHdrBytes || used > kNetBufBytes) {
    frame = nullptr;
    len = 0;
  } else {
    frame = rx_bufs_ + uint64_t{kNetBufBytes} * slot + kNetHdrBytes;
    len = used - kNetHdrBytes;
    ++frames_received;
  }
  return true;
}

void NetDriver::post_rx(uint16_t buffer) {
  const Buf b = buf_in(rx_bufs_ + uint64_t{kNetBufBytes} * buffer, kNetBufBytes);
  const int head = rx.add(&b, 1);
  if (head >= 0) rx_buffer_of_[head] = buffer;
}

void NetDriver::release(int slot) {
  if (slot < 0) return;
  post_rx(static_cast<uint16_t>(slot));
  rx.kick();
}

}  // namespace testguest::virtio
