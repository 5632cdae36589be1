// hostile: for every virtio device on the command line, the guest breaks the transport and ring
// rules on purpose (docs/security.md #1-#12 and the device checks 13-17 it can reach) and checks
// after each step that the VMM answered as it should and is still serving:
//   transport (here): odd-width and unaligned register accesses, accesses straddling the window
//     end, config writes (read-only fields, past the end), status bits out of order, features not
//     offered or without VERSION_1, QueueSel out of range, bad rings refused at QueueReady
//     (size 0 / not a power of two / above the maximum, misaligned, outside RAM, overlapping),
//     queue registers written after QueueReady and after DRIVER_OK, notifies for missing queues,
//     a reset with requests in flight;
//   rings (hostile_rings.cpp): cyclic chains, next out of range, buffers outside RAM or
//     overflowing, bad indirect tables, avail.idx jumps and out-of-range heads (NEEDS_RESET, then
//     a reset and re-init must bring the device back);
//   devices (hostile_devices.cpp): blk, net and vsock requests that break their device's rules.
// After each device's steps every device must still answer a probe request. The VMM logs the
// guest errors as warnings; the host test checks its exit status and stderr.
#include "guest/testguest/scenarios/hostile.h"

#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenario.h"
#include "guest/testguest/virtio/dma.h"

namespace testguest {
namespace hostile {
namespace {

uint64_t top_of_ram = 0;

// The transport's documented answer to a register access that is not 4 bytes wide and aligned:
// reads return 0, writes are ignored (vmm/virtio/mmio_transport.h, docs/security.md #9).
const char* odd_widths(Target& t) {
  t.dev.reset();
  const uint64_t b = t.dev.base();
  const uint64_t r8 = mmio_read<uint8_t>(b + kMagicValue);
  const uint64_t r16 = mmio_read<uint16_t>(b + kMagicValue);
  const uint64_t r64 = mmio_read<uint64_t>(b + kMagicValue);
  const uint64_t ru = mmio_read<uint32_t>(b + kMagicValue + 2);
  if (r8 || r16 || r64 || ru) {
    out << "testguest: hostile " << t.name << ": MagicValue as 1/2/8/unaligned-4 bytes: " << hex(r8)
        << " " << hex(r16) << " " << hex(r64) << " " << hex(ru) << "\n";
    return failed(t, "odd-width reads",
                  "a register read that is not 4 bytes aligned returned data");
  }
  mmio_write<uint8_t>(b + kStatus, kStatusAcknowledge);
  mmio_write<uint16_t>(b + kStatus, kStatusAcknowledge);
  mmio_write<uint64_t>(b + kStatus, kStatusAcknowledge);
  mmio_write<uint32_t>(b + kStatus + 1, kStatusAcknowledge);
  mmio_write<uint32_t>(b + kQueueSel + 2, 1);
  if (const uint32_t s = t.dev.status())
    return failed(t, "odd-width writes", s == ~0u ? "device gone" : "an odd-width write stuck");
  // Configuration space takes any width (virtio 1.2 §4.2.2): 8 bytes = two 4-byte halves.
  const uint64_t wide = mmio_read<uint64_t>(b + kConfig);
  if (wide != t.dev.config64(0)) return failed(t, "config widths", "8-byte config read differs");
  // Straddling the end of the window, and the last bytes of it.
  (void)mmio_read<uint64_t>(b + kWindowSize - 4);
  (void)mmio_read<uint16_t>(b + kWindowSize - 1);
  if (t.dev.read(kMagicValue) != kMagic) return failed(t, "window end", "device gone");
  return nullptr;
}

const char* config_writes(Target& t) {
  const uint64_t b = t.dev.base();
  const uint64_t before = t.dev.config64(0);
  t.dev.write(kConfig, 0xdeadbeef);
  mmio_write<uint8_t>(b + kConfig + 3, 0x5a);
  mmio_write<uint64_t>(b + kConfig + 4, 0x0123456789abcdefull);
  mmio_write<uint64_t>(b + kWindowSize - 8, ~0ull);
  mmio_write<uint32_t>(b + kWindowSize - 2, ~0u);  // straddles into the next window
  if (t.dev.config64(0) != before)
    return failed(t, "config writes", "a read-only config field changed");
  if (t.dev.read(kMagicValue) != kMagic) return failed(t, "config writes", "device gone");
  return nullptr;
}

// virtio 1.2 §3.1.1: each status bit only after the ones before it; FEATURES_OK only for offered
// features including VERSION_1.
const char* status_order(Target& t) {
  t.dev.reset();
  t.dev.write(kStatus, kStatusDriverOk);
  if (t.dev.status() != 0)
    return failed(t, "status order", "DRIVER_OK accepted before ACKNOWLEDGE");
  t.dev.write(kStatus, kStatusAcknowledge);
  t.dev.write(kStatus, kStatusAcknowledge | kStatusFeaturesOk);
  if (t.dev.status() != kStatusAcknowledge)
    return failed(t, "status order", "FEATURES_OK accepted without DRIVER");
  t.dev.write(kStatus, kStatusAcknowledge | kStatusDriver);
  t.dev.write(kDriverFeaturesSel, 1);
  t.dev.write(kDriverFeatures, 1 | (1u << 18));  // VERSION_1 and bit 50, never offered
  t.dev.write(kStatus, kStatusAcknowledge | kStatusDriver | kStatusFeaturesOk);
  if (t.dev.status() & kStatusFeaturesOk)
    return failed(t, "feature negotiation", "FEATURES_OK accepted with a feature not offered");
  t.dev.write(kDriverFeatures, 0);  // no VERSION_1
  t.dev.write(kStatus, kStatusAcknowledge | kStatusDriver | kStatusFeaturesOk);
  if (t.dev.status() & kStatusFeaturesOk)
    return failed(t, "feature negotiation", "FEATURES_OK accepted without VERSION_1");
  t.dev.write(kStatus, kStatusAcknowledge | kStatusDriver | kStatusDriverOk);
  if (t.dev.status() & kStatusDriverOk)
    return failed(t, "status order", "DRIVER_OK accepted without FEATURES_OK");
  return nullptr;
}

struct BadRing {
  const char* what;
  uint32_t num;
  uint64_t desc, avail, used;
};

// docs/security.md #6, #8, #10: QueueSel out of range and bad rings, each refused at QueueReady.
const char* queue_config(Target& t) {
  const uint64_t offered = t.dev.begin_init();
  if (!t.dev.negotiate(offered, wanted_features(t)))
    return failed(t, "negotiation", "FEATURES_OK refused");
  const uint32_t missing[] = {static_cast<uint32_t>(t.queue_count) + 5, 0xffffffff};
  for (uint32_t sel : missing) {
    t.dev.write(kQueueSel, sel);
    if (t.dev.read(kQueueNumMax) != 0)
      return failed(t, "QueueSel out of range", "QueueNumMax is not 0 for a missing queue");
    t.dev.write(kQueueNum, 8);
    t.dev.write(kQueueDescLow, 0x300000);
    t.dev.write(kQueueReady, 1);
    if (t.dev.read(kQueueReady) != 0)
      return failed(t, "QueueSel out of range", "a missing queue became ready");
  }
  t.dev.write(kQueueSel, 0);
  const uint32_t max = t.dev.read(kQueueNumMax);
  uint8_t* area = static_cast<uint8_t*>(dma_alloc(0, 4096));  // just an aligned free address
  const uint64_t a = phys(area) + 0x100000;  // unused RAM: the rings are never written
  const uint64_t top = ram_top();
  const BadRing bad[] = {
      {"size 0", 0, a, a + 0x1000, a + 0x2000},
      {"size 3", 3, a, a + 0x1000, a + 0x2000},
      {"size above the maximum", max * 2, a, a + 0x10000, a + 0x20000},
      {"size 65536", 0x10000, a, a + 0x10000, a + 0x20000},
      {"misaligned descriptor table", 8, a + 8, a + 0x1000, a + 0x2000},
      {"misaligned driver area", 8, a, a + 0x1001, a + 0x2000},
      {"misaligned device area", 8, a, a + 0x1000, a + 0x2002},
      {"descriptor table in the MMIO hole", 8, 0xd0000000, a + 0x1000, a + 0x2000},
      {"device area past the end of RAM", 8, a, a + 0x1000, top - 16},
      {"driver area past 2^64", 8, a, ~0ull - 7, a + 0x2000},
      {"overlapping rings", 8, a, a + 0x40, a + 0x2000},
  };
  for (const BadRing& r : bad) {
    t.dev.write(kQueueNum, r.num);
    t.dev.write(kQueueDescLow, static_cast<uint32_t>(r.desc));
    t.dev.write(kQueueDescHigh, static_cast<uint32_t>(r.desc >> 32));
    t.dev.write(kQueueDriverLow, static_cast<uint32_t>(r.avail));
    t.dev.write(kQueueDriverHigh, static_cast<uint32_t>(r.avail >> 32));
    t.dev.write(kQueueDeviceLow, static_cast<uint32_t>(r.used));
    t.dev.write(kQueueDeviceHigh, static_cast<uint32_t>(r.used >> 32));
    t.dev.write(kQueueReady, 1);
    if (t.dev.read(kQueueReady) != 0) {
      out << "testguest: hostile " << t.name << ": ring with " << r.what << " accepted\n";
      return failed(t, "bad rings", "QueueReady accepted a bad ring");
    }
  }
  return nullptr;
}

// docs/security.md #7: queue registers written after QueueReady and after DRIVER_OK are ignored.
const char* frozen_queues(Target& t) {
  if (const char* e = setup_queues(t)) return failed(t, "setup after bad rings", e);
  t.dev.write(kQueueSel, static_cast<uint32_t>(t.probe_queue));
  t.dev.write(kQueueNum, 2);
  t.dev.write(kQueueDescLow, 0x1000);
  t.dev.write(kQueueDeviceLow, 0x3000);
  fill_rx(t);
  t.dev.driver_ok();
  if (t.dev.status() & kStatusNeedsReset) return failed(t, "driver ok", "NEEDS_RESET at DRIVER_OK");
  for (int q = 0; q < t.queue_count; ++q) {
    t.dev.write(kQueueSel, static_cast<uint32_t>(q));
    t.dev.write(kQueueReady, 0);
    t.dev.write(kQueueDriverLow, 0x2000);
    t.dev.write(kQueueNum, 4);
  }
  if (const char* e = probe(t)) return failed(t, "queue registers after ready", e);
  return nullptr;
}

// docs/security.md #11: notifies for missing queues; and a reset while requests are in flight.
const char* notifies_and_reset(Target& t) {
  t.dev.write(kQueueNotify, static_cast<uint32_t>(t.queue_count) + 3);
  t.dev.write(kQueueNotify, 0xffff);
  mmio_write<uint16_t>(t.dev.base() + kQueueNotify, static_cast<uint16_t>(t.probe_queue));
  if (const char* e = probe(t)) return failed(t, "notify for missing queues", e);
  // Fill the probe queue, notify, and reset at once: the device must drop the requests cleanly.
  Virtqueue& q = t.probe_q();
  const Buf b{phys(t.scratch), 512, t.probe_writable};
  while (q.add(&b, 1) >= 0) {
  }
  q.kick();
  t.dev.reset();
  if (const char* e = bring_up(t)) return failed(t, "re-init after a reset in flight", e);
  if (const char* e = probe(t)) return failed(t, "probe after a reset in flight", e);
  return nullptr;
}

}  // namespace

uint64_t ram_top() {
  return top_of_ram;
}

void set_ram_top(const MemoryMap& memory) {
  for (uint32_t i = 0; i < memory.count; ++i) {
    const MemRange& r = memory.ranges[i];
    if (r.type == kMemRam && r.addr + r.size > top_of_ram) top_of_ram = r.addr + r.size;
  }
}

const char* failed(const Target& t, const char* check, const char* reason) {
  out << "testguest: hostile " << t.name << ": " << check << " failed: " << reason << "\n";
  return reason;
}

bool wait_needs_reset(Target& t) {
  Deadline deadline(kTimeout);
  while (!deadline.expired()) {
    if (t.dev.status() & kStatusNeedsReset) return true;
    Deadline pause(200'000);  // keep the Status reads (exits) sparse
    while (!pause.expired())
      cpu_relax();
  }
  return false;
}

const char* transport_steps(Target& t) {
  if (const char* e = odd_widths(t)) return e;
  if (const char* e = bring_up(t)) return failed(t, "bring-up", e);
  if (const char* e = config_writes(t)) return e;
  if (const char* e = probe(t)) return failed(t, "probe after config writes", e);
  if (const char* e = status_order(t)) return e;
  if (const char* e = queue_config(t)) return e;
  if (const char* e = frozen_queues(t)) return e;
  return notifies_and_reset(t);
}

}  // namespace hostile

ScenarioResult run_hostile(const BootInfo& boot) {
  using namespace hostile;
  DeviceList list;
  if (const char* e = start_virtio(boot, list)) return e;
  set_ram_top(boot.memory);
  static Target targets[kMaxDevices];
  int n = 0;
  int per_type[32] = {};
  for (int i = 0; i < list.count; ++i) {
    const DeviceInfo& info = list.devices[i];
    if (info.device_id == 0 || info.device_id >= 32) continue;
    if (const char* e = prepare(targets[n], info, per_type[info.device_id]++)) return e;
    if (const char* e = bring_up(targets[n])) return failed(targets[n], "bring-up", e);
    if (const char* e = probe(targets[n])) return failed(targets[n], "first probe", e);
    ++n;
  }
  if (n == 0) return "no virtio devices to attack";
  for (int i = 0; i < n; ++i) {
    Target& t = targets[i];
    const uint64_t start = rdtsc();
    if (const char* e = transport_steps(t)) return e;
    if (const char* e = ring_steps(t)) return e;
    if (const char* e = device_steps(t)) return e;
    // The attacked device was left up; every device must still answer.
    for (int j = 0; j < n; ++j) {
      if (const char* e = probe(targets[j])) {
        out << "testguest: hostile: after attacking " << t.name << ", " << targets[j].name
            << " does not answer\n";
        return e;
      }
    }
    out << "testguest: hostile " << t.name << " survived, " << dec((rdtsc() - start) / 1000)
        << "k TSC cycles\n";
  }
  for (int i = 0; i < n; ++i)
    targets[i].dev.reset();
  return nullptr;
}

}  // namespace testguest
