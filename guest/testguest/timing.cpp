#include "guest/testguest/timing.h"

#include "guest/testguest/cpu.h"
#include "guest/testguest/legacy_pic.h"

namespace testguest {
namespace {

constexpr uint16_t kPitChannel0 = 0x40;
constexpr uint16_t kPitCommand = 0x43;
constexpr uint32_t kCalibrationTicks = kPitHz * 3 / 100;  // 30 ms

uint16_t read_pit_count() {
  outb(kPitCommand, 0x00);  // latch channel 0
  const uint8_t lo = inb(kPitChannel0);
  const uint8_t hi = inb(kPitChannel0);
  return static_cast<uint16_t>(lo | (hi << 8));
}

}  // namespace

uint64_t calibrate_tsc_hz() {
  // Mode 2 with the longest reload (65536 ticks, 55 ms): the count wraps, so it is sampled often
  // and the decrements are summed modulo 2^16. Interrupts stay off (IF is clear at CPL3).
  outb(kPitCommand, 0x34);
  outb(kPitChannel0, 0);
  outb(kPitChannel0, 0);
  uint16_t prev = read_pit_count();
  const uint64_t start = rdtsc();
  uint64_t ticks = 0;
  uint64_t end = start;
  Deadline deadline(20'000'000'000);
  while (ticks < kCalibrationTicks) {
    if (deadline.expired()) {
      pit_stop();
      return 0;
    }
    const uint16_t now = read_pit_count();
    end = rdtsc();
    ticks += static_cast<uint16_t>(prev - now);
    prev = now;
  }
  pit_stop();
  return (end - start) * kPitHz / ticks;  // < 2^64 for any TSC below ~500 THz
}

}  // namespace testguest
