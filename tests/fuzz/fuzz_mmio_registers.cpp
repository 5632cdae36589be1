// Fuzzes MmioTransport with the echo device: the input is a memory image followed by a sequence
// of register and config-space accesses of any width and offset, with a few "macro" operations
// (the Linux init sequence, a notify) so the fuzzer reaches live queues quickly.
//
// Input: [memory_len:2][memory bytes][ops...]; each op is [kind:1][offset:2][value:8] where
//   kind % 8: 0 read, 1 write, 2 32-bit register write, 3 32-bit register read,
//             4 Linux init with ring addresses from value, 5 notify queue value, 6 reset,
//             7 rewrite 8 bytes of guest memory at offset
//   kind / 8 % 4 selects the width 1, 2, 4 or 8 for kinds 0 and 1.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "tests/fuzz/fuzz_memory.h"
#include "tests/unit/virtio/echo_device.h"
#include "vmm/virtio/mmio_transport.h"

using namespace carapace;
using namespace carapace::virtio;

namespace {

class NullIrq : public Interrupt {
 public:
  void trigger() override {}
};

void wr32(MmioTransport& t, MmioReg r, uint32_t v) {
  t.write(offset_of(r), {reinterpret_cast<uint8_t*>(&v), 4});
}
uint32_t rd32(MmioTransport& t, MmioReg r) {
  uint32_t v;
  t.read(offset_of(r), {reinterpret_cast<uint8_t*>(&v), 4});
  return v;
}

void linux_init(MmioTransport& t, uint64_t v) {
  wr32(t, MmioReg::kStatus, 0);
  wr32(t, MmioReg::kStatus, 1);
  wr32(t, MmioReg::kStatus, 3);
  wr32(t, MmioReg::kDriverFeaturesSel, 1);
  wr32(t, MmioReg::kDriverFeatures, 1 | ((v >> 62) & 1 ? 0x100 : 0));  // VERSION_1 [+ junk]
  wr32(t, MmioReg::kDriverFeaturesSel, 0);
  wr32(t, MmioReg::kDriverFeatures, static_cast<uint32_t>(v >> 32) & 0x30000001);
  wr32(t, MmioReg::kStatus, rd32(t, MmioReg::kStatus) | 8);
  for (uint32_t q = 0; q < 2; ++q) {
    // Ring placement from the value's bytes: mostly sane, sometimes not.
    const uint64_t base = ((v >> (8 * q)) & 0xff) * 0x100;
    wr32(t, MmioReg::kQueueSel, q);
    wr32(t, MmioReg::kQueueNum, 1u << ((v >> (16 + 4 * q)) & 0xf));
    wr32(t, MmioReg::kQueueDescLow, static_cast<uint32_t>(base));
    wr32(t, MmioReg::kQueueDriverLow, static_cast<uint32_t>(base + 0x1000 + (v >> 24 & 3)));
    wr32(t, MmioReg::kQueueDeviceLow, static_cast<uint32_t>(base + 0x2000));
    wr32(t, MmioReg::kQueueReady, 1);
  }
  wr32(t, MmioReg::kStatus, rd32(t, MmioReg::kStatus) | 4);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const GuestMemory& mem = fuzz::fuzz_memory();
  fuzz::Input in(data, size);
  size_t mem_len = in.take<uint16_t>();
  if (mem_len > in.size()) mem_len = in.size();
  fuzz::load_memory(mem, in.data(), mem_len);
  fuzz::Input ops(in.data() + mem_len, in.size() - mem_len);

  auto dev = std::make_shared<virtio::fake::EchoDevice>();
  NullIrq irq;
  auto t = MmioTransport::create(dev, mem, &irq, nullptr, 0xd0000000);
  if (!t.ok()) __builtin_trap();
  MmioTransport& tr = **t;
  uint8_t buf[8];
  for (int n = 0; n < 512 && !ops.empty(); ++n) {
    const uint8_t kind = ops.take<uint8_t>();
    const uint16_t offset = ops.take<uint16_t>() % kMmioWindowSize;
    const uint64_t value = ops.take<uint64_t>();
    const size_t width = size_t{1} << (kind / 8 % 4);
    // The bus never hands a device an access past its window (IoBus::find).
    const size_t fit = offset + width <= kMmioWindowSize ? width : kMmioWindowSize - offset;
    std::memcpy(buf, &value, 8);
    switch (kind % 8) {
      case 0:
        tr.read(offset, {buf, fit});
        break;
      case 1:
        tr.write(offset, {buf, fit});
        break;
      case 2:
        wr32(tr, static_cast<MmioReg>(offset & 0xfc), static_cast<uint32_t>(value));
        break;
      case 3:
        (void)rd32(tr, static_cast<MmioReg>(offset & 0xfc));
        break;
      case 4:
        linux_init(tr, value);
        break;
      case 5:
        wr32(tr, MmioReg::kQueueNotify, static_cast<uint32_t>(value % 4));
        break;
      case 6:
        wr32(tr, MmioReg::kStatus, 0);
        break;
      case 7:
        (void)mem.write_obj(GuestAddress(offset * 16ull), value);
        break;
    }
  }
  return 0;
}
