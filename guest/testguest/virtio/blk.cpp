#include "guest/testguest/virtio/blk.h"

#include "guest/testguest/virtio/dma.h"

namespace testguest::virtio {
namespace {

constexpr uint64_t kTimeout = kDeviceTimeout;
// Status bytes the device has not written read as this.
constexpr uint8_t kStatusUnset = 0xee;

}  // namespace

const char* BlkDriver::init(const DeviceInfo& info, uint16_t queue_size, bool event_idx) {
  dev = Device(info);
  const uint64_t wanted = kBlkFSizeMax | kBlkFSegMax | kBlkFRo | kBlkFBlkSize | kBlkFFlush |
                          (event_idx ? kFEventIdx : 0);
  const InitResult r = init_device(dev, wanted, &vq, 1, queue_size);
  offered = r.offered;
  features = r.accepted;
  if (r.error) return r.error;
  if (!headers_) {
    headers_ = static_cast<BlkHeader*>(dma_alloc(sizeof(BlkHeader) * Virtqueue::kMaxSize, 64));
    status_ = static_cast<uint8_t*>(dma_alloc(Virtqueue::kMaxSize, 64));
    if (!headers_ || !status_) return "out of DMA memory";
  }
  capacity = dev.config64(0);
  size_max = (features & kBlkFSizeMax) ? dev.config32(8) : 0;
  seg_max = (features & kBlkFSegMax) ? dev.config32(12) : 0;
  return nullptr;
}

int BlkDriver::start(uint32_t type, uint64_t sector, void* data, uint32_t len) {
  // The head is only known once the chain is taken, and the header must be in place before the
  // avail entry is published: take the descriptors first, then fill them in.
  const int n = len ? 3 : 2;
  uint16_t ids[3];
  const int head = vq.take_chain(n, ids);
  if (head < 0) return -1;
  BlkHeader& h = headers_[head];
  h = BlkHeader{type, 0, sector};
  status_[head] = kStatusUnset;
  const bool data_in = type == kBlkIn || type == kBlkGetId;
  Desc* d[3] = {&vq.desc(ids[0]), &vq.desc(ids[1]), n == 3 ? &vq.desc(ids[2]) : nullptr};
  *d[0] = Desc{phys(&h), sizeof(BlkHeader), kDescNext, ids[1]};
  if (len) {
    *d[1] = Desc{phys(data), len, static_cast<uint16_t>(kDescNext | (data_in ? kDescWrite : 0)),
                 ids[2]};
  }
  *d[n - 1] = Desc{phys(&status_[head]), 1, kDescWrite, 0};
  vq.push_avail(static_cast<uint16_t>(head));
  return head;
}

bool BlkDriver::poll(int& tag, uint8_t& status, uint32_t& used_len) {
  uint32_t head, len;
  if (!vq.pop_used(head, len)) return false;
  tag = static_cast<int>(head);
  status = head < vq.size() ? status_[head] : kStatusUnset;
  used_len = len;
  return true;
}

int BlkDriver::request(uint32_t type, uint64_t sector, void* data, uint32_t len,
                       uint32_t* used_len) {
  const int tag = start(type, sector, data, len);
  if (tag < 0) return -1;
  kick();
  uint32_t head, got_len;
  if (!vq.wait_used(head, got_len, kTimeout) || head != static_cast<uint32_t>(tag)) return -1;
  if (used_len) *used_len = got_len;
  return status_[tag];
}

}  // namespace testguest::virtio
