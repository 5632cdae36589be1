// The hostile scenario's targets: bring-up with raw queues, and the probe request per device type.
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenarios/hostile.h"
#include "guest/testguest/virtio/blk.h"
#include "guest/testguest/virtio/dma.h"
#include "guest/testguest/virtio/net.h"
#include "guest/testguest/virtio/vsock.h"

extern "C" void* memcpy(void* dest, const void* src, size_t n);
extern "C" void* memset(void* dest, int value, size_t n);

namespace testguest::hostile {

uint64_t wanted_features(const Target& t) {
  uint64_t f = kFIndirectDesc;
  if (t.info.device_id == kTypeVsock) f |= kVsockFStream;
  return f;
}

const char* prepare(Target& t, const DeviceInfo& info, int index_of_type) {
  t.info = info;
  t.dev = Device(info);
  t.rx_watch = nullptr;
  const uint32_t type = info.device_id;
  const bool rx = type == kTypeNet || type == kTypeVsock;
  t.queue_count = type == kTypeVsock ? 3 : type == kTypeNet ? 2 : 1;
  t.probe_queue = rx ? 1 : 0;
  t.probe_writable = !rx;
  const char* type_str = type_name(type);
  int n = 0;
  while (type_str[n] && n < 8) {
    t.name[n] = type_str[n];
    ++n;
  }
  t.name[n++] = static_cast<char>('0' + index_of_type % 10);
  t.name[n] = '\0';
  t.scratch = static_cast<uint8_t*>(dma_alloc(8192, 4096));
  t.rx_bufs =
      rx ? static_cast<uint8_t*>(dma_alloc(uint64_t{kRxBytes} * kQueueSize, 4096)) : nullptr;
  if (!t.scratch || (rx && !t.rx_bufs)) return "out of DMA memory";
  return nullptr;
}

const char* setup_queues(Target& t) {
  for (int q = 0; q < t.queue_count; ++q) {
    if (const char* e = t.queues[q].setup(t.dev, static_cast<uint16_t>(q), kQueueSize)) return e;
  }
  return nullptr;
}

namespace {

void post_rx(Target& t, uint16_t buffer) {
  const Buf b{phys(t.rx_bufs + uint64_t{kRxBytes} * buffer), kRxBytes, true};
  const int head = t.queues[0].add(&b, 1);
  if (head >= 0) t.rx_buffer_of[head] = buffer;
}

}  // namespace

void fill_rx(Target& t) {
  if (!t.rx_bufs) return;
  for (uint16_t i = 0; i < t.queues[0].size(); ++i)
    post_rx(t, i);
  t.queues[0].publish_avail_idx(t.queues[0].avail_idx());  // notified after DRIVER_OK
}

void drain_rx(Target& t, void (*seen)(Target&, const uint8_t*, uint32_t)) {
  if (!t.rx_bufs) return;
  if (!seen) seen = t.rx_watch;
  Virtqueue& q = t.queues[0];
  uint32_t head, len;
  bool any = false;
  while (q.pop_used(head, len)) {
    if (head >= q.size()) continue;
    const uint16_t buffer = t.rx_buffer_of[head];
    if (seen && len <= kRxBytes) seen(t, t.rx_bufs + uint64_t{kRxBytes} * buffer, len);
    post_rx(t, buffer);
    any = true;
  }
  if (any) q.kick();
}

const char* bring_up(Target& t) {
  const uint64_t offered = t.dev.begin_init();
  t.features = t.dev.negotiate(offered, wanted_features(t));
  if (!t.features) return "FEATURES_OK refused";
  if (const char* e = setup_queues(t)) return e;
  fill_rx(t);
  t.dev.driver_ok();
  if (t.rx_bufs) t.queues[0].kick();
  if (t.info.device_id == kTypeVsock) t.cid = t.dev.config64(0);
  const uint32_t status = t.dev.status();
  if (status & kStatusNeedsReset) return "DEVICE_NEEDS_RESET after DRIVER_OK";
  if (!(status & kStatusDriverOk)) return "DRIVER_OK refused";
  return nullptr;
}

int64_t wait_head(Target& t, Virtqueue& q, int head) {
  Deadline deadline(kTimeout);
  uint32_t got, len;
  for (;;) {
    if (q.pop_used(got, len)) {
      if (got == static_cast<uint32_t>(head)) return len;
      continue;  // a leftover of an earlier step
    }
    if (deadline.expired()) return -1;
    drain_rx(t);  // a device answering on rx (vsock RSTs) must never run out of buffers
    cpu_relax();
  }
}

int64_t submit(Target& t, const Buf* bufs, int n) {
  Virtqueue& q = t.probe_q();
  const int head = q.add(bufs, n);
  if (head < 0) return -1;
  q.kick();
  return wait_head(t, q, head);
}

const char* probe(Target& t, bool indirect) {
  drain_rx(t);
  uint8_t* s = t.scratch;
  Buf bufs[3];
  int n = 0;
  switch (t.info.device_id) {
    case kTypeRng:
      bufs[n++] = Buf{phys(s), 64, true};
      break;
    case kTypeBlock: {
      auto* h = reinterpret_cast<BlkHeader*>(s);
      *h = BlkHeader{kBlkIn, 0, 0};
      s[1024] = 0xee;
      bufs[n++] = Buf{phys(h), sizeof *h, false};
      bufs[n++] = Buf{phys(s + 512), 512, true};
      bufs[n++] = Buf{phys(s + 1024), 1, true};
      break;
    }
    case kTypeNet: {
      memset(s, 0, kNetHdrBytes + 60);
      uint8_t* f = s + kNetHdrBytes;
      memset(f, 0xff, 6);  // broadcast from 02:00:00:00:00:01, EtherType 0x88b5
      f[6] = 2;
      f[11] = 1;
      f[12] = 0x88;
      f[13] = 0xb5;
      memcpy(f + 14, "testguest hostile probe", 23);
      bufs[n++] = Buf{phys(s), kNetHdrBytes + 60, false};
      break;
    }
    case kTypeVsock: {
      // An RST for no connection: the device drops it without an answer.
      const VsockHdr h{t.cid, kHostCid, 7777, 7778, 0, kVsockTypeStream, kOpRst, 0, 0, 0};
      memcpy(s, &h, sizeof h);
      bufs[n++] = Buf{phys(s), sizeof h, false};
      break;
    }
    default:
      return "unknown device type";
  }
  int64_t len;
  if (indirect) {
    auto* table = reinterpret_cast<Desc*>(s + 4096);
    for (int i = 0; i < n; ++i)
      table[i] = Desc{bufs[i].addr, bufs[i].len,
                      static_cast<uint16_t>((bufs[i].device_writes ? kDescWrite : 0) |
                                            (i + 1 < n ? kDescNext : 0)),
                      static_cast<uint16_t>(i + 1)};
    const Buf ind{phys(table), static_cast<uint32_t>(16 * n), false};
    uint16_t ids[1];
    const int head = t.probe_q().take_chain(1, ids);
    if (head < 0) return "no free descriptor";
    t.probe_q().desc(ids[0]) = Desc{ind.addr, ind.len, kDescIndirect, 0};
    t.probe_q().push_avail(ids[0]);
    t.probe_q().kick();
    len = wait_head(t, t.probe_q(), head);
  } else {
    len = submit(t, bufs, n);
  }
  if (len < 0) return "the probe request did not complete";
  switch (t.info.device_id) {
    case kTypeRng:
      if (len != 64) return "the rng probe returned the wrong length";
      break;
    case kTypeBlock:
      if (s[1024] != kBlkOk) return "the blk probe (read sector 0) failed";
      break;
    default:
      break;
  }
  if (t.dev.status() & kStatusNeedsReset) return "DEVICE_NEEDS_RESET after the probe";
  return nullptr;
}

}  // namespace testguest::hostile
