// timer: with interrupts enabled at CPL3, counts LAPIC timer interrupts (periodic mode) and then
// PIT channel 0 interrupts routed through the IOAPIC. The CPL0 handlers only count and EOI
// (interrupts.S); everything else happens here.
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/ioapic.h"
#include "guest/testguest/lapic.h"
#include "guest/testguest/legacy_pic.h"
#include "guest/testguest/mptable.h"
#include "guest/testguest/scenario.h"

extern "C" volatile uint32_t lapic_timer_ticks, pit_ticks, pit_pin0_ticks;  // interrupts.S

namespace testguest {
namespace {

constexpr uint32_t kTicks = 10;
// 10 ticks need ~10-20 ms; the bound is generous because a loaded host can starve the vCPU
// thread for seconds (seen in CI runs sharing the machine).
constexpr uint64_t kTimeoutCycles = 30'000'000'000;  // 6-30 s depending on the TSC rate
constexpr uint32_t kLapicDivideBy16 = 0x3;
constexpr uint32_t kLapicInitialCount = 100000;  // 1.6 ms at KVM's 1 GHz APIC bus clock
constexpr uint32_t kPitHzWanted = 1000;

// Waits for `counter` to reach kTicks. Returns the mean TSC cycles between ticks, or 0 on timeout
// or once `give_up` reaches kTicks (interrupts arriving where they should not).
uint64_t wait_for_ticks(volatile uint32_t& counter, volatile uint32_t& give_up) {
  Deadline deadline(kTimeoutCycles);
  uint32_t seen = counter;
  uint64_t first_tsc = 0;
  uint64_t last_tsc = 0;
  while (seen < kTicks) {
    if (deadline.expired() || give_up >= kTicks) return 0;
    const uint32_t now = counter;
    if (now != seen) {
      last_tsc = rdtsc();
      if (seen == 0) first_tsc = last_tsc;
      seen = now;
    }
    cpu_relax();
  }
  return (last_tsc - first_tsc) / (kTicks - 1);
}

ScenarioResult check_apic_base() {
  const uint64_t apic_base = cpl0_rdmsr(kMsrApicBase);  // through the CPL0 gate
  out << "testguest: IA32_APIC_BASE " << hex(apic_base) << "\n";
  if ((apic_base & 0xfffff000) != kLapicBase) return "LAPIC not at 0xfee00000";
  if (!(apic_base & (1 << 11))) return "LAPIC globally disabled in IA32_APIC_BASE";
  if (apic_base & (1 << 10)) return "LAPIC in x2APIC mode";
  return nullptr;
}

ScenarioResult run_lapic_timer(uint64_t& cycles_per_tick) {
  lapic_timer_ticks = 0;
  lapic_write(kLapicTimerDivide, kLapicDivideBy16);
  lapic_write(kLapicLvtTimer, VEC_LAPIC_TIMER | kLvtTimerPeriodic);
  lapic_write(kLapicTimerInitial, kLapicInitialCount);
  cycles_per_tick = wait_for_ticks(lapic_timer_ticks, pit_pin0_ticks);  // pin 0 is masked here
  lapic_write(kLapicLvtTimer, kLvtMasked);
  lapic_write(kLapicTimerInitial, 0);
  if (!cycles_per_tick) {
    out << "testguest: lapic timer ticks " << dec(lapic_timer_ticks) << "\n";
    return "LAPIC timer interrupts did not arrive in time";
  }
  return nullptr;
}

ScenarioResult run_pit(uint64_t& cycles_per_tick) {
  // ISA IRQ 0 goes to IOAPIC pin 2 on PC-compatible machines; the MP table says so explicitly.
  MpInfo mp;
  const char* no_mp = read_mp_table(mp);
  const uint32_t pin = (!no_mp && mp.isa_irq0_pin >= 0) ? mp.isa_irq0_pin : 2;
  const uint32_t pins = ioapic_pin_count();
  out << "testguest: ioapic " << dec(pins) << " pins, PIT on pin " << dec(pin)
      << (no_mp ? " (default, no MP table)" : " (MP table)") << "\n";
  if (pin >= pins) return "PIT's IOAPIC pin does not exist";

  pit_ticks = 0;
  pit_pin0_ticks = 0;
  const uint8_t bsp = lapic_id();
  ioapic_route(pin, VEC_PIT, bsp);
  if (pin != 0) ioapic_route(0, VEC_PIT_PIN0, bsp);
  pit_start_periodic(kPitHzWanted);
  cycles_per_tick = wait_for_ticks(pit_ticks, pit_pin0_ticks);
  ioapic_mask(pin);
  ioapic_mask(0);
  pit_stop();
  if (pit_pin0_ticks) {
    out << "testguest: " << dec(pit_pin0_ticks) << " PIT interrupts arrived on IOAPIC pin 0"
        << (pin != 0 ? ", which the MP table does not name for ISA IRQ 0\n" : "\n");
  }
  if (!cycles_per_tick) {
    out << "testguest: PIT ticks on pin " << dec(pin) << ": " << dec(pit_ticks) << "\n";
    return pit_pin0_ticks ? "PIT interrupts arrive on IOAPIC pin 0, not the pin the MP table names"
                          : "PIT interrupts did not arrive in time";
  }
  return nullptr;
}

}  // namespace

ScenarioResult run_timer(const BootInfo&) {
  if (ScenarioResult apic = check_apic_base()) return apic;
  pic_remap_and_mask();
  lapic_write(kLapicSvr, kSvrEnable | VEC_SPURIOUS);
  lapic_write(kLapicTpr, 0);
  enable_interrupts();
  uint64_t lapic_cycles = 0;
  uint64_t pit_cycles = 0;
  ScenarioResult result = run_lapic_timer(lapic_cycles);
  if (!result) result = run_pit(pit_cycles);
  disable_interrupts();
  if (result) return result;

  // Periods in TSC cycles, for the log only: the TSC rate is not known here, and virtual timers may
  // run late under load.
  out << "testguest: " << dec(kTicks) << " lapic timer ticks, " << dec(lapic_cycles)
      << " TSC cycles apart; " << dec(kTicks) << " PIT ticks, " << dec(pit_cycles)
      << " TSC cycles apart\n";
  return nullptr;
}

}  // namespace testguest
