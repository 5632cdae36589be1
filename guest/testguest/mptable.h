// The Intel MultiProcessor Specification 1.4 table: processors, buses, I/O APICs, interrupt
// routing.
#pragma once

#include <cstdint>

#include "guest/testguest/asm_defs.h"

namespace testguest {

struct MpProcessor {
  uint8_t apic_id;
  bool bsp;
};

struct MpInfo {
  uint64_t floating_pointer;  // physical address of "_MP_"
  uint64_t config_table;      // physical address of "PCMP"
  uint32_t lapic_addr;
  uint32_t entry_count;         // entries found in the table's length
  uint32_t header_entry_count;  // what the header claims (0 from qboot)
  uint32_t processor_count;     // enabled processors
  MpProcessor processors[MAX_CPUS];
  uint32_t ioapic_addr;  // first enabled I/O APIC, 0 if none
  int isa_irq0_pin;      // I/O APIC pin of ISA IRQ 0, -1 if the table has no such entry
};

// Finds and checks the table (signatures, checksums, entry bounds). Returns nullptr and fills `mp`,
// or returns why there is no usable table (e.g. "no MP table").
const char* read_mp_table(MpInfo& mp);

}  // namespace testguest
