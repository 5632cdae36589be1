// Fuzzes Queue + DescriptorChain + ChainReader/ChainWriter: the input is a queue configuration
// and the guest memory holding the rings, descriptor tables and buffers. The device side pops
// everything, reads and writes through the chain streams, completes, and asks about
// notifications. ASan/UBSan catch any access outside guest RAM or arithmetic overflow.
//
// Input: [size_log2:1][flags:1][next_avail:2][desc:8][avail:8][used:8] then memory bytes.
//   flags bit 0: EVENT_IDX, bit 1: INDIRECT_DESC, bit 2: take ring addresses from the input
//   (else the fixed layout desc 0x0, avail 0x1000, used 0x2000).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tests/fuzz/fuzz_memory.h"
#include "vmm/virtio/queue.h"

using namespace carapace;
using namespace carapace::virtio;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const GuestMemory& mem = fuzz::fuzz_memory();
  fuzz::Input in(data, size);
  const uint8_t size_log2 = in.take<uint8_t>();
  const uint8_t flags = in.take<uint8_t>();
  QueueState s;
  s.ready = true;
  s.size = static_cast<uint16_t>(1u << (size_log2 % 10));  // 1 .. 512, some above the max
  if (size_log2 & 0x80) s.size = static_cast<uint16_t>(size_log2 * 7);  // not powers of two too
  s.next_avail = s.next_used = in.take<uint16_t>();
  s.event_idx = flags & 1;
  s.indirect = flags & 2;
  const uint64_t desc = in.take<uint64_t>(), avail = in.take<uint64_t>(),
                 used = in.take<uint64_t>();
  if (flags & 4) {
    s.desc_table = desc;
    s.avail_ring = avail;
    s.used_ring = used;
  } else {
    s.desc_table = 0x0;
    s.avail_ring = 0x1000;
    s.used_ring = 0x2000;
  }
  fuzz::load_memory(mem, in.data(), in.size());

  auto q = Queue::activate(mem, s, 256);
  if (!q.ok()) return 0;
  std::vector<uint8_t> buf(4096);
  std::vector<DescriptorChain> held;
  // Bounded: pop never returns more than `size` chains per avail window.
  for (int i = 0; i < 4 * 512; ++i) {
    auto c = q->pop();
    if (!c.ok() || !c->has_value()) break;
    DescriptorChain& chain = **c;
    auto reader = chain.reader();
    while (reader.available() > 0) {
      const size_t n = reader.available() < buf.size() ? reader.available() : buf.size();
      if (!reader.read({buf.data(), n}).ok()) __builtin_trap();  // validated: must succeed
    }
    auto writer = chain.writer();
    if (writer.available() > 0) {
      auto status = writer.split_end(1);
      if (!status.ok() || !status->write_obj(uint8_t{0}).ok()) __builtin_trap();
      if (writer.available() > 3) (void)writer.skip(3);
      while (writer.available() > 0) {
        auto slice = writer.next_slice(1000);
        if (!slice.ok() || slice->empty()) __builtin_trap();
        (*slice)[0] = 0xab;
      }
    }
    if (i % 3 == 0) {
      held.push_back(std::move(chain));  // completed later, out of order
    } else if (!q->add_used(chain.head(), static_cast<uint32_t>(writer.bytes_written())).ok()) {
      __builtin_trap();
    }
    if (i % 5 == 0) (void)q->needs_notification();
    if (i % 7 == 0) (void)q->enable_notification();
  }
  while (!held.empty()) {
    if (!q->add_used(held.back().head(), 0).ok()) __builtin_trap();
    held.pop_back();
  }
  (void)q->needs_notification();
  (void)q->enable_notification();
  // Restoring the saved state must be accepted (it was valid) and behave.
  auto again = Queue::activate(mem, q->save(), 256);
  if (!again.ok()) __builtin_trap();
  (void)again->pop();
  return 0;
}
