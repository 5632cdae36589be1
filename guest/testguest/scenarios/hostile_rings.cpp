// Hostile ring steps on a running device (docs/security.md #1, #2, #4, #5): chains the device must
// refuse by returning them with length 0 (and go on serving), and ring corruption it must answer
// with DEVICE_NEEDS_RESET (and recover from after a reset and re-init).
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenarios/hostile.h"
#include "guest/testguest/virtio/dma.h"

namespace testguest::hostile {
namespace {

uint16_t flags_of(const Target& t, uint16_t extra) {
  return static_cast<uint16_t>((t.probe_writable ? kDescWrite : 0) | extra);
}

// Publishes a chain of `n` raw descriptors (already filled in by `fill`) and expects it back with
// length 0 (the device cannot tell a refused TX chain from a sent one: for those only that it
// came back), then a working probe.
template <typename Fill>
const char* refused_chain(Target& t, const char* check, int n, Fill fill) {
  Virtqueue& q = t.probe_q();
  uint16_t ids[4];
  const int head = q.take_chain(n, ids);
  if (head < 0) return failed(t, check, "no free descriptors");
  fill(q, ids);
  q.push_avail(static_cast<uint16_t>(head));
  q.kick();
  const int64_t len = wait_head(t, q, head);
  if (len < 0) return failed(t, check, "the bad chain was never returned");
  if (t.probe_writable && len != 0) return failed(t, check, "the bad chain was processed");
  if (const char* e = probe(t)) return failed(t, check, e);
  return nullptr;
}

const char* bad_chains(Target& t) {
  const uint64_t s = phys(t.scratch);
  const uint16_t size = t.probe_q().size();
  if (const char* e = refused_chain(t, "cyclic chain", 2, [&](Virtqueue& q, uint16_t* ids) {
        q.desc(ids[0]) = Desc{s, 64, flags_of(t, kDescNext), ids[1]};
        q.desc(ids[1]) = Desc{s + 64, 64, flags_of(t, kDescNext), ids[0]};
      }))
    return e;
  if (const char* e = refused_chain(t, "self loop", 1, [&](Virtqueue& q, uint16_t* ids) {
        q.desc(ids[0]) = Desc{s, 64, flags_of(t, kDescNext), ids[0]};
      }))
    return e;
  if (const char* e = refused_chain(t, "next out of range", 1, [&](Virtqueue& q, uint16_t* ids) {
        q.desc(ids[0]) = Desc{s, 64, flags_of(t, kDescNext), static_cast<uint16_t>(size + 7)};
      }))
    return e;
  struct Outside {
    const char* what;
    uint64_t addr;
  };
  const Outside outside[] = {{"buffer in the MMIO hole", 0xd0000000},
                             {"buffer across the end of RAM", ram_top() - 16},
                             {"buffer wrapping past 2^64", ~0ull - 31},
                             {"buffer above 2^52", 1ull << 52}};
  for (const Outside& o : outside) {
    if (const char* e = refused_chain(t, o.what, 1, [&](Virtqueue& q, uint16_t* ids) {
          q.desc(ids[0]) = Desc{o.addr, 64, flags_of(t, 0), 0};
        }))
      return e;
  }
  // A good first buffer followed by one outside RAM: the whole chain is refused.
  return refused_chain(t, "second buffer outside RAM", 2, [&](Virtqueue& q, uint16_t* ids) {
    q.desc(ids[0]) = Desc{s, 64, flags_of(t, kDescNext), ids[1]};
    q.desc(ids[1]) = Desc{0xd0000000, 64, flags_of(t, 0), 0};
  });
}

// docs/security.md #5, when the device offers VIRTIO_RING_F_INDIRECT_DESC (the transport does).
const char* bad_indirect(Target& t) {
  if (!(t.features & kFIndirectDesc)) {
    out << "testguest: hostile " << t.name << ": no INDIRECT_DESC, indirect steps skipped\n";
    return nullptr;
  }
  const uint64_t table = phys(t.scratch) + 4096;
  auto* entries = reinterpret_cast<Desc*>(t.scratch + 4096);
  const uint16_t size = t.probe_q().size();
  for (int i = 0; i < 4; ++i)
    entries[i] = Desc{phys(t.scratch), 64, flags_of(t, 0), 0};
  struct Bad {
    const char* what;
    uint64_t addr;
    uint32_t len;
    uint16_t flags;
  };
  const Bad bad[] = {
      {"indirect table of 24 bytes", table, 24, kDescIndirect},
      {"empty indirect table", table, 0, kDescIndirect},
      {"indirect with NEXT", table, 16, kDescIndirect | kDescNext},
      {"indirect table longer than the queue", table, 16u * (size + 1), kDescIndirect},
      {"indirect table outside RAM", 0xd0000000, 64, kDescIndirect},
  };
  for (const Bad& b : bad) {
    if (const char* e = refused_chain(t, b.what, 1, [&](Virtqueue& q, uint16_t* ids) {
          q.desc(ids[0]) = Desc{b.addr, b.len, b.flags, 0};
        }))
      return e;
  }
  entries[0] = Desc{table + 256, 16, kDescIndirect, 0};  // nested
  if (const char* e =
          refused_chain(t, "nested indirect table", 1, [&](Virtqueue& q, uint16_t* ids) {
            q.desc(ids[0]) = Desc{table, 16, kDescIndirect, 0};
          }))
    return e;
  entries[0] = Desc{phys(t.scratch), 64, flags_of(t, kDescNext), 0};  // a cycle inside
  if (const char* e =
          refused_chain(t, "cycle in an indirect table", 1, [&](Virtqueue& q, uint16_t* ids) {
            q.desc(ids[0]) = Desc{table, 32, kDescIndirect, 0};
          }))
    return e;
  // And a good one: the probe through an indirect table.
  if (const char* e = probe(t, true)) return failed(t, "indirect probe", e);
  return nullptr;
}

// docs/security.md #4: avail.idx more than the queue size ahead, and a head out of range.
const char* corrupt_ring(Target& t, bool jump) {
  const char* check = jump ? "avail.idx jump" : "avail head out of range";
  Virtqueue& q = t.probe_q();
  const uint16_t used_before = q.used_idx();
  if (jump) {
    q.publish_avail_idx(static_cast<uint16_t>(q.avail_idx() + q.size() + 1));
    q.notify();
  } else {
    q.push_avail(static_cast<uint16_t>(q.size() + 3));
    q.kick();
  }
  if (!wait_needs_reset(t)) return failed(t, check, "no DEVICE_NEEDS_RESET");
  if (q.used_idx() != used_before) return failed(t, check, "the device used buffers anyway");
  // virtio 1.2 §2.1.2: NEEDS_RESET comes with a configuration change notification. The VMM may
  // set the status bit a moment before the interrupt bit: give it time.
  Deadline interrupt(kTimeout);
  while (!(t.dev.read(kInterruptStatus) & 2)) {
    if (interrupt.expired())
      return failed(t, check, "no configuration change interrupt with NEEDS_RESET");
    Deadline pause(200'000);
    while (!pause.expired())
      cpu_relax();
  }
  t.dev.write(kInterruptAck, 2);
  // Notifying a broken device does nothing; a reset and re-init bring it back.
  q.notify();
  if (const char* e = bring_up(t)) return failed(t, check, e);
  if (const char* e = probe(t)) return failed(t, check, e);
  return nullptr;
}

}  // namespace

const char* ring_steps(Target& t) {
  if (const char* e = bad_chains(t)) return e;
  if (const char* e = bad_indirect(t)) return e;
  if (const char* e = corrupt_ring(t, true)) return e;
  return corrupt_ring(t, false);
}

}  // namespace testguest::hostile
