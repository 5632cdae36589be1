#include "guest/testguest/virtio/init.h"

#include "guest/testguest/virtio/dma.h"

namespace testguest::virtio {

const char* start_virtio(const BootInfo& boot, DeviceList& list) {
  if (const char* no_dma = dma_init(boot.memory)) return no_dma;
  return discover(boot.cmdline, list);
}

const char* start_virtio_device(const BootInfo& boot, DeviceList& list, uint32_t type,
                                const DeviceInfo*& info) {
  info = nullptr;
  if (const char* e = start_virtio(boot, list)) return e;
  info = list.find(type);
  return info ? nullptr : missing_device_error(type);
}

InitResult init_device(Device& dev, uint64_t wanted, Virtqueue* queues, int n,
                       uint16_t queue_size) {
  InitResult r{nullptr, 0, 0};
  r.offered = dev.begin_init();
  r.accepted = dev.negotiate(r.offered, wanted);
  if (r.accepted == 0) {
    r.error = (r.offered & kFVersion1) ? "device refused FEATURES_OK" : "VERSION_1 not offered";
    return r;
  }
  const bool event_idx = r.accepted & kFEventIdx;
  for (int i = 0; i < n; ++i) {
    if (const char* e = queues[i].setup(dev, static_cast<uint16_t>(i), queue_size, event_idx)) {
      r.error = e;
      return r;
    }
  }
  dev.driver_ok();
  const uint32_t status = dev.status();
  if (status & kStatusNeedsReset) {
    r.error = "DEVICE_NEEDS_RESET right after DRIVER_OK";
  } else if (!(status & kStatusDriverOk)) {
    r.error = "DRIVER_OK did not stick";
  }
  return r;
}

}  // namespace testguest::virtio
