#include "guest/testguest/legacy_pic.h"

#include "guest/testguest/asm_defs.h"
#include "guest/testguest/cpu.h"

namespace testguest {
namespace {

constexpr uint16_t kPic1Command = 0x20;
constexpr uint16_t kPic1Data = 0x21;
constexpr uint16_t kPic2Command = 0xa0;
constexpr uint16_t kPic2Data = 0xa1;
constexpr uint16_t kPitChannel0 = 0x40;
constexpr uint16_t kPitCommand = 0x43;

}  // namespace

void pic_remap_and_mask() {
  outb(kPic1Command, 0x11);  // ICW1: edge, cascade, ICW4 follows
  outb(kPic2Command, 0x11);
  outb(kPic1Data, VEC_PIC_BASE);  // ICW2: vector base
  outb(kPic2Data, VEC_PIC_BASE + 8);
  outb(kPic1Data, 1 << 2);  // ICW3: slave on IRQ 2
  outb(kPic2Data, 2);
  outb(kPic1Data, 0x01);  // ICW4: 8086 mode
  outb(kPic2Data, 0x01);
  outb(kPic1Data, 0xff);  // OCW1: mask all
  outb(kPic2Data, 0xff);
}

uint16_t pit_start_periodic(uint32_t hz) {
  const uint16_t count = static_cast<uint16_t>(kPitHz / hz);
  outb(kPitCommand, 0x34);  // channel 0, lobyte/hibyte, mode 2, binary
  outb(kPitChannel0, static_cast<uint8_t>(count));
  outb(kPitChannel0, static_cast<uint8_t>(count >> 8));
  return count;
}

void pit_stop() {
  outb(kPitCommand, 0x30);  // channel 0, lobyte/hibyte, mode 0
  outb(kPitChannel0, 0);
  outb(kPitChannel0, 0);
}

}  // namespace testguest
