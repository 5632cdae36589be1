// The hostile scenario's shared pieces: one Target per virtio device, brought up with raw queues
// so the steps can break the rules on purpose, and a probe (one ordinary request) that proves a
// device still works. See hostile.cpp for the list of steps.
#pragma once

#include <cstdint>

#include "guest/testguest/boot_info.h"
#include "guest/testguest/virtio/init.h"

namespace testguest::hostile {

using namespace virtio;

inline constexpr uint64_t kTimeout = kDeviceTimeout;  // a request the device should answer
inline constexpr uint16_t kQueueSize = 16;
inline constexpr uint32_t kRxBytes = 4096;

struct Target {
  DeviceInfo info;
  Device dev;
  Virtqueue queues[3];
  int queue_count;      // queues this driver sets up (net: rx and tx; vsock: rx, tx, event)
  int probe_queue;      // where probes and bad chains go (rng, blk: 0; net, vsock: tx = 1)
  bool probe_writable;  // probe buffers are written by the device (rng, blk)
  char name[12];        // "blk0", "rng0", ...
  uint64_t features;    // negotiated
  uint64_t cid;         // vsock: the guest's CID
  uint8_t* scratch;     // 8 KiB of DMA memory for probes and bad chains
  uint8_t* rx_bufs;     // net, vsock: buffers kept on queue 0 (kRxBytes each)
  uint16_t rx_buffer_of[kQueueSize];  // per queue-0 head: the buffer it carries
  // Sees every queue-0 buffer drain_rx gives back when its caller names no `seen` of its own --
  // also the drains while submit() waits for a TX completion, which a reply may overtake.
  void (*rx_watch)(Target&, const uint8_t*, uint32_t);

  Virtqueue& probe_q() { return queues[probe_queue]; }
};

// Features a target asks for: INDIRECT_DESC (for the indirect-table steps) and what the device
// type needs.
uint64_t wanted_features(const Target& t);
// Fills a target from its DeviceInfo (queues, probe kind, name, DMA memory).
const char* prepare(Target& t, const DeviceInfo& info, int index_of_type);
// The whole normal bring-up. Returns nullptr or why it failed.
const char* bring_up(Target& t);
// Steps between FEATURES_OK and DRIVER_OK, split out so steps can meddle in between.
const char* setup_queues(Target& t);
void fill_rx(Target& t);
// One ordinary request on the probe queue (through an indirect table when `indirect`); nullptr
// if it completed as it should.
const char* probe(Target& t, bool indirect = false);
// Gives every used queue-0 buffer back (net, vsock); calls `seen` on each received buffer first.
void drain_rx(Target& t, void (*seen)(Target&, const uint8_t*, uint32_t) = nullptr);
// Submits a chain as given on the probe queue and waits for that head. Returns the used length,
// or -1 on timeout.
int64_t submit(Target& t, const Buf* bufs, int n);
// Waits for `head` on queue `q`, dropping other completions. Returns its used length or -1.
int64_t wait_head(Target& t, Virtqueue& q, int head);
// Polls Status until DEVICE_NEEDS_RESET shows (true) or a timeout.
bool wait_needs_reset(Target& t);
// Highest RAM address + 1, from the memory map.
uint64_t ram_top();
void set_ram_top(const MemoryMap& memory);

// Step groups (each returns nullptr, or the reason after printing which check failed).
const char* transport_steps(Target& t);
const char* ring_steps(Target& t);
const char* device_steps(Target& t);

// Prints "testguest: hostile <target>: <check> failed" and returns `reason`.
const char* failed(const Target& t, const char* check, const char* reason);

}  // namespace testguest::hostile
