#include "guest/testguest/serial.h"

#include "guest/testguest/cpu.h"

namespace testguest {
namespace {

constexpr uint8_t kFcrEnableAndClear = 0x07;  // enable FIFOs, clear RX and TX
constexpr uint8_t kIirFifosEnabled = 0xc0;
constexpr size_t kFifoDepth = 16;

size_t burst = 0;  // 0: not probed yet

// A 16550A reports enabled FIFOs in IIR bits 6-7; an 8250 (or no UART: reads 0xff... which also
// has them set, harmless since nothing listens) does not.
void probe_fifo() {
  outb(kUartFcr, kFcrEnableAndClear);
  burst = (inb(kUartFcr) & kIirFifosEnabled) == kIirFifosEnabled ? kFifoDepth : 1;
}

void wait_thre() {
  // A missing UART reads 0xff (THRE set); a wedged one must not hang the guest forever.
  for (uint32_t spins = 0; spins < 1000000 && !(inb(kUartLsr) & kLsrThre); ++spins)
    cpu_relax();
}

}  // namespace

size_t serial_burst() {
  if (!burst) probe_fifo();
  return burst;
}

void serial_write(const char* data, size_t length) {
  const size_t max_burst = serial_burst();
  while (length) {
    wait_thre();
    size_t chunk = length < max_burst ? length : max_burst;
    length -= chunk;
    asm volatile("rep outsb" : "+S"(data), "+c"(chunk) : "d"(kUartThr) : "memory");
  }
}

}  // namespace testguest
