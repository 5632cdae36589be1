// Hostile device steps: requests that break one device type's rules (docs/security.md #13-#17, as
// far as a guest alone can reach them). Each must come back (with an error status where the device
// has one) and leave the device serving.
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
namespace {

constexpr uint8_t kUnset = 0xee;

// A blk request with the status byte at scratch+1024: returns the status (kUnset if the device
// wrote none), or -1 if the chain never came back.
int blk_request(Target& t, const BlkHeader& h, const Buf* middle, int n_middle,
                bool with_status = true) {
  auto* hdr = reinterpret_cast<BlkHeader*>(t.scratch);
  *hdr = h;
  uint8_t* status = t.scratch + 1024;
  *status = kUnset;
  Buf bufs[4];
  int n = 0;
  bufs[n++] = Buf{phys(hdr), sizeof *hdr, false};
  for (int i = 0; i < n_middle; ++i)
    bufs[n++] = middle[i];
  if (with_status) bufs[n++] = Buf{phys(status), 1, true};
  if (submit(t, bufs, n) < 0) return -1;
  return *status;
}

const char* blk_steps(Target& t) {
  const uint64_t capacity = t.dev.config64(0);
  const Buf data{phys(t.scratch + 2048), 512, true};
  struct Case {
    const char* what;
    BlkHeader h;
    int want;  // expected status; -2: only that the chain comes back
  };
  const Case cases[] = {
      {"read at capacity", {kBlkIn, 0, capacity}, kBlkIoErr},
      {"read at sector 2^64-1", {kBlkIn, 0, ~0ull}, kBlkIoErr},
      {"read where sector*512 overflows", {kBlkIn, 0, 1ull << 56}, kBlkIoErr},
      {"write at capacity", {kBlkOut, 0, capacity}, kBlkIoErr},
      {"unknown request type", {0x7fffffff, 0, 0}, kBlkUnsupp},
  };
  for (const Case& c : cases) {
    Buf mid = data;
    mid.device_writes = c.h.type != kBlkOut;
    const int s = blk_request(t, c.h, &mid, 1);
    if (s != c.want) {
      out << "testguest: hostile " << t.name << ": " << c.what << ": status " << hex(s & 0xff)
          << (s < 0 ? " (timeout)" : "") << ", expected " << hex(c.want) << "\n";
      return failed(t, c.what, "wrong status");
    }
  }
  // docs/security.md #14: GET_ID into a buffer shorter than the 20-byte id.
  const Buf short_id{phys(t.scratch + 2048), 10, true};
  const int id_status = blk_request(t, BlkHeader{kBlkGetId, 0, 0}, &short_id, 1);
  if (id_status != kBlkIoErr) {
    out << "testguest: hostile " << t.name << ": GET_ID with a 10-byte buffer: status "
        << hex(id_status & 0xff) << ", expected IOERR\n";
    return failed(t, "short GET_ID buffer", "wrong status");
  }
  // docs/security.md #13, #15: chains the device cannot answer with a status must still come back.
  if (blk_request(t, BlkHeader{kBlkIn, 0, 0}, nullptr, 0, false) < 0)
    return failed(t, "header-only chain", "never returned");
  const Buf readable_status{phys(t.scratch + 1024), 1, false};
  if (blk_request(t, BlkHeader{kBlkFlush, 0, 0}, &readable_status, 1, false) < 0)
    return failed(t, "readable status byte", "never returned");
  const Buf empty_status{phys(t.scratch + 1024), 0, true};
  if (blk_request(t, BlkHeader{kBlkFlush, 0, 0}, &empty_status, 1, false) < 0)
    return failed(t, "zero-length status descriptor", "never returned");
  const Buf short_header{phys(t.scratch), 8, false};
  const Buf status{phys(t.scratch + 1024), 1, true};
  const Buf two[] = {short_header, status};
  if (submit(t, two, 2) < 0) return failed(t, "8-byte header", "never returned");
  const Buf readable_data{phys(t.scratch + 2048), 512, false};
  if (blk_request(t, BlkHeader{kBlkIn, 0, 0}, &readable_data, 1) < 0)
    return failed(t, "read into a readable buffer", "never returned");
  const Buf odd{phys(t.scratch + 2048), 100, true};
  if (blk_request(t, BlkHeader{kBlkIn, 0, 0}, &odd, 1) < 0)
    return failed(t, "read of 100 bytes", "never returned");
  return nullptr;
}

const char* net_steps(Target& t) {
  // docs/security.md #16: runt and oversized frames are dropped (and counted) by the device.
  static uint8_t* big = nullptr;
  constexpr uint32_t kBig = 65536 + 4096;
  if (!big && !(big = static_cast<uint8_t*>(dma_alloc(kBig, 4096)))) return "out of DMA memory";
  memset(t.scratch, 0, 64);
  struct Case {
    const char* what;
    uint64_t addr;
    uint32_t len;
  };
  const Case cases[] = {
      {"frame shorter than the virtio header", phys(t.scratch), 4},
      {"header without a frame", phys(t.scratch), kNetHdrBytes},
      {"runt frame", phys(t.scratch), kNetHdrBytes + 6},
      {"64 KiB frame", phys(big), kBig},
  };
  for (const Case& c : cases) {
    const Buf b{c.addr, c.len, false};
    if (submit(t, &b, 1) < 0) return failed(t, c.what, "never returned");
  }
  // A header and a frame in separate descriptors, with GSO asked for but never negotiated.
  t.scratch[1] = 1;  // gso_type TCPV4
  const Buf split[] = {{phys(t.scratch), kNetHdrBytes, false}, {phys(t.scratch + 64), 60, false}};
  if (submit(t, split, 2) < 0) return failed(t, "GSO frame without the feature", "never returned");
  // A TX chain with a writable part.
  const Buf mixed[] = {{phys(t.scratch), kNetHdrBytes + 60, false},
                       {phys(t.scratch + 2048), 64, true}};
  if (submit(t, mixed, 2) < 0)
    return failed(t, "TX chain with a writable buffer", "never returned");
  return nullptr;
}

// Counts RSTs arriving for the refused REQUEST (its port is in the target's scratch area).
uint32_t rsts_for_request = 0;
void watch_rst(Target&, const uint8_t* buf, uint32_t len) {
  VsockHdr h;
  if (len < sizeof h) return;
  memcpy(&h, buf, sizeof h);
  if (h.op == kOpRst && h.dst_port == 40001) ++rsts_for_request;
}

const char* vsock_steps(Target& t) {
  static uint8_t* big = nullptr;
  constexpr uint32_t kBig = 70000;
  if (!big && !(big = static_cast<uint8_t*>(dma_alloc(sizeof(VsockHdr) + kBig, 64))))
    return "out of DMA memory";
  struct Case {
    const char* what;
    VsockHdr h;
    uint32_t payload;  // bytes actually sent after the header
  };
  const uint64_t cid = t.cid;
  const Case cases[] = {
      {"len larger than the payload", {cid, kHostCid, 40000, 9, 1000, 1, kOpRw, 0, 0, 0}, 10},
      {"len smaller than the payload", {cid, kHostCid, 40000, 9, 4, 1, kOpRw, 0, 0, 0}, 100},
      {"len above 64 KiB", {cid, kHostCid, 40000, 9, kBig, 1, kOpRw, 0, 0, 0}, kBig},
      {"unknown op", {cid, kHostCid, 40000, 9, 0, 1, 99, 0, 0, 0}, 0},
      {"spoofed source CID", {77, kHostCid, 40000, 9, 0, 1, kOpRequest, 0, 65536, 0}, 0},
      {"destination not the host", {cid, 5, 40000, 9, 0, 1, kOpRequest, 0, 65536, 0}, 0},
      {"seqpacket request", {cid, kHostCid, 40000, 9, 0, 2, kOpRequest, 0, 65536, 0}, 0},
      {"data for no connection", {cid, kHostCid, 40000, 9, 8, 1, kOpRw, 0, 65536, 0}, 8},
      {"buf_alloc 2^32-1 credit", {cid, kHostCid, 40000, 9, 0, 1, kOpCreditUpdate, 0, ~0u, ~0u}, 0},
      {"header cut short", {cid, kHostCid, 40000, 9, 0, 1, kOpRst, 0, 0, 0}, 0},
  };
  for (const Case& c : cases) {
    memcpy(big, &c.h, sizeof c.h);
    const bool cut = c.what[0] == 'h';
    const Buf b{phys(big), cut ? 20u : static_cast<uint32_t>(sizeof c.h + c.payload), false};
    if (submit(t, &b, 1) < 0) return failed(t, c.what, "never returned");
  }
  // A REQUEST to a host port nobody listens on (<uds>_1): refused with an RST to our port. The
  // RST may come back before the device marks the REQUEST's TX buffer used, so it is counted on
  // every drain from here on, submit()'s own included.
  rsts_for_request = 0;
  t.rx_watch = watch_rst;
  const VsockHdr req{cid, kHostCid, 40001, 1, 0, 1, kOpRequest, 0, 65536, 0};
  memcpy(big, &req, sizeof req);
  const Buf b{phys(big), sizeof req, false};
  const int64_t sent = submit(t, &b, 1);
  Deadline deadline(kTimeout);
  while (sent >= 0 && rsts_for_request == 0 && !deadline.expired()) {
    drain_rx(t);
    cpu_relax();
  }
  t.rx_watch = nullptr;
  if (sent < 0) return failed(t, "request to a closed port", "never returned");
  if (rsts_for_request == 0) return failed(t, "request to a closed port", "no RST came back");
  return nullptr;
}

}  // namespace

const char* device_steps(Target& t) {
  const char* e = nullptr;
  switch (t.info.device_id) {
    case kTypeBlock:
      e = blk_steps(t);
      break;
    case kTypeNet:
      e = net_steps(t);
      break;
    case kTypeVsock:
      e = vsock_steps(t);
      break;
    default:
      break;
  }
  if (e) return e;
  if (t.dev.status() & kStatusNeedsReset) return failed(t, "device steps", "DEVICE_NEEDS_RESET");
  return probe(t);
}

}  // namespace testguest::hostile
