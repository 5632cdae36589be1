// serial: a fixed pattern the host compares byte for byte, plus UART register checks.
#include "guest/testguest/serial.h"
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenario.h"

namespace testguest {
namespace {

// The host test expects exactly these lines, NNN from 000 to 063.
constexpr int kLines = 64;
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

bool scratch_round_trips() {
  constexpr uint8_t kValues[] = {0x55, 0xaa, 0x00, 0xff};
  for (uint8_t value : kValues) {
    outb(kUartScratch, value);
    if (inb(kUartScratch) != value) return false;
  }
  return true;
}

}  // namespace

ScenarioResult run_serial(const BootInfo&) {
  const uint64_t begin = rdtsc();
  for (int i = 0; i < kLines; ++i) {
    out << "testguest: serial line " << dec(i, 3) << " " << kAlphabet << "\n";
  }
  const uint64_t cycles = rdtsc() - begin;
  out << "testguest: " << dec(kLines) << " lines in " << dec(cycles >> 10) << " Ki TSC cycles, "
      << dec(serial_burst()) << " bytes per THRE wait\n";
  if (!scratch_round_trips()) return "UART scratch register does not round-trip";
  // Everything written so far has been taken: the transmitter must report empty.
  Deadline deadline(100'000'000);
  while ((inb(kUartLsr) & kLsrThre) == 0) {
    if (deadline.expired()) return "UART LSR.THRE stays clear when idle";
    cpu_relax();
  }
  outb(kUartLcr, 0x03);  // 8N1, DLAB off: what every console driver writes
  if (inb(kUartLcr) != 0x03) return "UART LCR does not read back";
  return nullptr;
}

}  // namespace testguest
