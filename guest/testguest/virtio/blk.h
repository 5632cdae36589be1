// A virtio-blk driver (virtio 1.2 §5.2) over one request queue: each request is a chain of
// header (readable), data (either direction, may be absent) and a status byte (writable).
// Requests are started, published with kick() and reaped with poll(), so benchmarks can keep many
// in flight; request() does one synchronously.
#pragma once

#include <cstdint>

#include "guest/testguest/virtio/init.h"

namespace testguest::virtio {

// Request types and status values (virtio 1.2 §5.2.6).
inline constexpr uint32_t kBlkIn = 0;
inline constexpr uint32_t kBlkOut = 1;
inline constexpr uint32_t kBlkFlush = 4;
inline constexpr uint32_t kBlkGetId = 8;
inline constexpr uint8_t kBlkOk = 0;
inline constexpr uint8_t kBlkIoErr = 1;
inline constexpr uint8_t kBlkUnsupp = 2;
inline constexpr uint32_t kBlkIdBytes = 20;
inline constexpr uint64_t kSector = 512;

// Feature bits (virtio 1.2 §5.2.3).
inline constexpr uint64_t kBlkFSizeMax = 1ull << 1;
inline constexpr uint64_t kBlkFSegMax = 1ull << 2;
inline constexpr uint64_t kBlkFRo = 1ull << 5;
inline constexpr uint64_t kBlkFBlkSize = 1ull << 6;
inline constexpr uint64_t kBlkFFlush = 1ull << 9;

struct BlkHeader {
  uint32_t type;
  uint32_t reserved;
  uint64_t sector;
};
static_assert(sizeof(BlkHeader) == 16);

class BlkDriver {
 public:
  // Brings the device up with `queue_size` entries, accepting SIZE_MAX, SEG_MAX, RO, BLK_SIZE and
  // FLUSH (and EVENT_IDX when `event_idx`), and reads the configuration it needs.
  const char* init(const DeviceInfo& info, uint16_t queue_size = 128, bool event_idx = false);

  // Queues one request (not yet visible to the device): `data` (len bytes) is written by the
  // device for kBlkIn/kBlkGetId, read by it otherwise; len 0 sends no data descriptor. Returns a
  // tag for poll(), or -1 when the queue is full.
  int start(uint32_t type, uint64_t sector, void* data, uint32_t len);
  void kick() { vq.kick(); }
  // A completed request: its tag, status byte and used length. False when none is ready.
  bool poll(int& tag, uint8_t& status, uint32_t& used_len);
  // One request, synchronously. Returns the status byte, or -1 on timeout.
  int request(uint32_t type, uint64_t sector, void* data, uint32_t len,
              uint32_t* used_len = nullptr);

  Device dev;
  Virtqueue vq;
  uint64_t offered = 0;
  uint64_t features = 0;
  uint64_t capacity = 0;  // in 512-byte sectors
  uint32_t size_max = 0;  // 0: not given
  uint32_t seg_max = 0;
  bool read_only() const { return features & kBlkFRo; }

 private:
  BlkHeader* headers_ = nullptr;  // one per descriptor head
  uint8_t* status_ = nullptr;
};

}  // namespace testguest::virtio
