#include "vmm/boot/mptable.h"

#include <cstring>
#include <vector>

#include "common/abi/mptable.h"
#include "vmm/memory/layout.h"

namespace carapace {

namespace {

using namespace abi;

constexpr uint8_t kLapicVersion = 0x14, kIoapicVersion = 0x11;
constexpr uint8_t kIsaBus = 0;

uint8_t checksum(const uint8_t* p, size_t n) {
  return static_cast<uint8_t>(-mp_byte_sum(p, n));
}

template <typename T>
void append(std::vector<uint8_t>& buf, const T& v) {
  auto* p = reinterpret_cast<const uint8_t*>(&v);
  buf.insert(buf.end(), p, p + sizeof v);
}

}  // namespace

Status write_mptable(const GuestMemory& mem, uint32_t num_cpus) {
  if (num_cpus == 0 || num_cpus > kMpTableMaxCpus)
    return make_error("MP table: unsupported vCPU count " + std::to_string(num_cpus));
  const uint8_t ioapic_id = static_cast<uint8_t>(num_cpus);
  std::vector<uint8_t> body;
  uint16_t count = 0;
  for (uint32_t i = 0; i < num_cpus; ++i) {
    MpProcessor p{};
    p.lapic_id = static_cast<uint8_t>(i);
    p.lapic_version = kLapicVersion;
    p.flags = 1 | (i == 0 ? 2 : 0);
    p.signature = 0x600;  // family 6, as a placeholder: Linux reads CPUID for the real one
    p.features = 0x201;   // FPU and APIC present
    append(body, p);
    ++count;
  }
  append(body, MpBus{kMpBus, kIsaBus, {'I', 'S', 'A', ' ', ' ', ' '}});
  append(body, MpIoapic{kMpIoapic, ioapic_id, kIoapicVersion, 1, uint32_t(layout::kIoapicAddr)});
  count += 2;
  // ISA IRQ n arrives on IOAPIC pin n: that is how KVM's default GSI routing wires the in-kernel
  // PIT and devices (GSI n -> PIC line n and IOAPIC pin n), so the table describes the real wiring
  // without a KVM_SET_GSI_ROUTING call. IRQ 2 is the PIC cascade and has no pin.
  for (uint8_t irq = 0; irq < kIoapicPins; ++irq) {
    if (irq == 2) continue;
    append(body, MpInterrupt{kMpIoInterrupt, kMpIrqInt, 0, kIsaBus, irq, ioapic_id, irq});
    ++count;
  }
  // LINT0 receives the PIC's ExtINT, LINT1 the NMI, on every local APIC.
  append(body, MpInterrupt{kMpLocalInterrupt, kMpIrqExtInt, 0, kIsaBus, 0, 0xff, 0});
  append(body, MpInterrupt{kMpLocalInterrupt, kMpIrqNmi, 0, kIsaBus, 0, 0xff, 1});
  count += 2;

  const uint64_t fp_addr = layout::kEbdaStart;
  const uint64_t table_addr = fp_addr + sizeof(MpFloatingPointer);
  MpConfigHeader hdr{};
  std::memcpy(hdr.signature, "PCMP", 4);
  hdr.base_length = static_cast<uint16_t>(sizeof hdr + body.size());
  hdr.spec_rev = 4;
  std::memcpy(hdr.oem_id, "CARAPACE", 8);
  std::memcpy(hdr.product_id, "MICROVM     ", 12);
  hdr.entry_count = count;
  hdr.lapic_addr = static_cast<uint32_t>(layout::kLapicAddr);
  std::vector<uint8_t> table;
  append(table, hdr);
  table.insert(table.end(), body.begin(), body.end());
  table[offsetof(MpConfigHeader, checksum)] = checksum(table.data(), table.size());
  if (table_addr + table.size() > layout::kHighMemStart)
    return make_error("MP table does not fit below 1 MiB");

  MpFloatingPointer fp{};
  std::memcpy(fp.signature, "_MP_", 4);
  fp.config_table = static_cast<uint32_t>(table_addr);
  fp.length = 1;
  fp.spec_rev = 4;
  fp.checksum = checksum(reinterpret_cast<const uint8_t*>(&fp), sizeof fp);

  TRY_STATUS(mem.write_obj(GuestAddress(fp_addr), fp));
  return mem.write(GuestAddress(table_addr), table);
}

}  // namespace carapace
