// smp: starts every AP the MP table lists with INIT-SIPI-SIPI. Each AP runs the real-mode
// trampoline (trampoline.S) into long mode, drops to CPL3 in ap_main, checks in, and parks itself
// at CPL0. APs are started one at a time, so CPU slot n is the n-th AP started.
#include "guest/testguest/asm_defs.h"
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/lapic.h"
#include "guest/testguest/mptable.h"
#include "guest/testguest/scenario.h"

// entry.S, descriptors.S, trampoline.S.
extern "C" char gdt[GDT_SIZE];
extern "C" uint8_t ap_kstacks[MAX_CPUS][AP_KSTACK_SIZE];
extern "C" uint8_t ap_ustacks[MAX_CPUS][AP_USTACK_SIZE];
extern "C" const char trampoline_start[], trampoline_end[];
extern "C" [[noreturn]] void ap_main(uint32_t slot);

namespace testguest {
namespace {

struct [[gnu::packed]] Tss64 {
  uint32_t reserved0;
  uint64_t rsp[3];
  uint64_t reserved1;
  uint64_t ist[7];
  uint64_t reserved2;
  uint16_t reserved3;
  uint16_t iomap_base;
};
static_assert(sizeof(Tss64) == TSS_SIZE);

// The iretq frame an AP finds at the top of its kernel stack (entry.S: ap_long_mode).
struct IretFrame {
  uint64_t rip, cs, rflags, rsp, ss;
};
static_assert(sizeof(IretFrame) == 40);

constexpr uint64_t kFirstSipiWait = 20'000'000;      // cycles; the second SIPI follows if needed
constexpr uint64_t kCheckInTimeout = 5'000'000'000;  // cycles

alignas(16) Tss64 ap_tss[MAX_CPUS];  // slot 0 (the BSP) uses bsp_tss
volatile uint32_t checked_in;
volatile uint8_t checked_in_apic_id[MAX_CPUS];

// A 16-byte available 64-bit TSS descriptor (type 9, present, DPL 0).
void write_tss_descriptor(uint32_t slot, const Tss64& tss) {
  const uint64_t base = reinterpret_cast<uint64_t>(&tss);
  const uint64_t limit = TSS_SIZE - 1;
  uint64_t* descriptor = reinterpret_cast<uint64_t*>(gdt + TSS_SEL0 + 16 * slot);
  descriptor[0] =
      limit | ((base & 0xffffff) << 16) | (0x89ull << 40) | (((base >> 24) & 0xff) << 56);
  descriptor[1] = base >> 32;
}

// Everything slot `slot` needs before its AP reaches long mode: TSS, GDT entry, first iretq frame.
void prepare_slot(uint32_t slot) {
  uint8_t* kstack_top = ap_kstacks[slot] + AP_KSTACK_SIZE;
  ap_tss[slot] = {};
  ap_tss[slot].rsp[0] = reinterpret_cast<uint64_t>(kstack_top);
  ap_tss[slot].iomap_base = TSS_SIZE;
  write_tss_descriptor(slot, ap_tss[slot]);
  auto* frame = reinterpret_cast<IretFrame*>(kstack_top - sizeof(IretFrame));
  frame->rip = reinterpret_cast<uint64_t>(&ap_main);
  frame->cs = USER_CS;
  frame->rflags = USER_RFLAGS;
  frame->rsp = reinterpret_cast<uint64_t>(ap_ustacks[slot] + AP_USTACK_SIZE - 8);
  frame->ss = USER_DS;
}

bool wait_check_in(uint32_t count, uint64_t cycles) {
  Deadline deadline(cycles);
  while (checked_in < count) {
    if (deadline.expired()) return false;
    cpu_relax();
  }
  return true;
}

ScenarioResult start_ap(uint8_t apic_id, uint32_t slot) {
  prepare_slot(slot);
  compiler_barrier();
  if (!lapic_send_ipi(apic_id, kIcrInit | kIcrLevelAssert)) return "INIT IPI stays pending";
  const uint32_t startup = kIcrStartup | (TRAMPOLINE_ADDR >> 12);
  if (!lapic_send_ipi(apic_id, startup)) return "STARTUP IPI stays pending";
  if (wait_check_in(slot, kFirstSipiWait)) return nullptr;
  // The MP spec's second SIPI: ignored by an AP that already left wait-for-SIPI.
  if (!lapic_send_ipi(apic_id, startup)) return "STARTUP IPI stays pending";
  if (wait_check_in(slot, kCheckInTimeout)) return nullptr;
  out << "testguest: AP with APIC id " << dec(apic_id) << " did not check in\n";
  return "an AP did not check in";
}

}  // namespace

ScenarioResult run_smp(const BootInfo&) {
  MpInfo mp;
  if (ScenarioResult no_mp = read_mp_table(mp)) return no_mp;
  const uint8_t bsp_id = lapic_id();
  out << "testguest: MP table at " << hex(mp.config_table) << ", " << dec(mp.entry_count)
      << " entries (header: " << dec(mp.header_entry_count) << "), " << dec(mp.processor_count)
      << " processors, APIC ids";
  bool bsp_listed = false;
  for (uint32_t i = 0; i < mp.processor_count; ++i) {
    out << " " << dec(mp.processors[i].apic_id) << (mp.processors[i].bsp ? "(bsp)" : "");
    if (mp.processors[i].apic_id == bsp_id) bsp_listed = mp.processors[i].bsp;
  }
  out << "\n";
  if (!bsp_listed) return "the BSP's APIC id is not listed as the bootstrap processor";
  if (mp.processor_count == 1) {
    out << "testguest: 1 processor, no APs to start\n";
    return nullptr;
  }

  __builtin_memcpy(reinterpret_cast<void*>(TRAMPOLINE_ADDR), trampoline_start,
                   trampoline_end - trampoline_start);
  const uint64_t begin = rdtsc();
  uint32_t slot = 0;
  for (uint32_t i = 0; i < mp.processor_count; ++i) {
    if (mp.processors[i].apic_id == bsp_id) continue;
    if (ScenarioResult failed = start_ap(mp.processors[i].apic_id, ++slot)) return failed;
    if (checked_in_apic_id[slot] != mp.processors[i].apic_id) {
      out << "testguest: AP slot " << dec(slot) << " reports APIC id "
          << dec(checked_in_apic_id[slot]) << ", expected " << dec(mp.processors[i].apic_id)
          << "\n";
      return "an AP reports another APIC id than the one started";
    }
  }
  out << "testguest: " << dec(checked_in) << " APs checked in, APIC ids";
  for (uint32_t s = 1; s <= slot; ++s)
    out << " " << dec(checked_in_apic_id[s]);
  out << "; " << dec((rdtsc() - begin) / 1000) << " K TSC cycles\n";
  return nullptr;
}

}  // namespace testguest

// An AP's first CPL3 code (through the frame prepare_slot left): record the APIC id, check in,
// park.
extern "C" void ap_main(uint32_t slot) {
  using namespace testguest;
  checked_in_apic_id[slot] = lapic_id();
  __atomic_fetch_add(&checked_in, 1, __ATOMIC_SEQ_CST);  // also orders the store above
  cpl0_halt_forever();
}
