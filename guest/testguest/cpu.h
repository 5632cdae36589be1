// CPU access from CPL3: port I/O (allowed by IOPL 3 or the BSP's I/O bitmap), MMIO, the TSC, and
// the CPL0 gate.
#pragma once

#include <cstdint>

#include "guest/testguest/asm_defs.h"

namespace testguest {

inline uint8_t inb(uint16_t port) {
  uint8_t value;
  asm volatile("inb %1, %0" : "=a"(value) : "Nd"(port));
  return value;
}

inline void outb(uint16_t port, uint8_t value) {
  asm volatile("outb %0, %1" : : "a"(value), "Nd"(port));
}

inline uint32_t mmio_read32(uint64_t addr) {
  return *reinterpret_cast<volatile uint32_t*>(addr);
}

inline void mmio_write32(uint64_t addr, uint32_t value) {
  *reinterpret_cast<volatile uint32_t*>(addr) = value;
}

inline uint64_t rdtsc() {
  uint32_t lo, hi;
  asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (uint64_t{hi} << 32) | lo;
}

inline void cpu_relax() {
  asm volatile("pause" ::: "memory");
}

// Stops the compiler from moving memory accesses across this point.
inline void compiler_barrier() {
  asm volatile("" ::: "memory");
}

// The CPL0 gate: `hlt` at CPL3 raises #GP; the #GP handler (interrupts.S) reads the request code in
// EAX, does the privileged work and, for requests that return, resumes after the hlt. `int N`
// cannot be used: the target host does not emulate it.
inline uint64_t cpl0_rdmsr(uint32_t msr) {
  uint32_t lo, hi;
  asm volatile("hlt" : "=a"(lo), "=d"(hi) : "a"(GATE_RDMSR), "c"(msr) : "memory");
  return (uint64_t{hi} << 32) | lo;
}

// Not sti/cli: see USER_RFLAGS in asm_defs.h.
inline void enable_interrupts() {
  asm volatile("hlt" : : "a"(GATE_ENABLE_INTERRUPTS) : "memory");
}
inline void disable_interrupts() {
  asm volatile("hlt" : : "a"(GATE_DISABLE_INTERRUPTS) : "memory");
}

[[noreturn]] inline void cpl0_halt_forever() {
  asm volatile("hlt" : : "a"(GATE_HALT) : "memory");
  __builtin_unreachable();
}

[[noreturn]] inline void cpl0_triple_fault() {
  asm volatile("hlt" : : "a"(GATE_TRIPLE_FAULT) : "memory");
  __builtin_unreachable();
}

// A TSC-based timeout. The TSC rate is not known without calibration; timeouts are given in cycles
// and chosen generously (1e9 cycles is 0.2-1 s on any plausible host).
class Deadline {
 public:
  explicit Deadline(uint64_t cycles) : end_(rdtsc() + cycles) {}
  bool expired() const { return static_cast<int64_t>(rdtsc() - end_) > 0; }

 private:
  uint64_t end_;
};

}  // namespace testguest
