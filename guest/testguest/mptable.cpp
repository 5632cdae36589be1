#include "guest/testguest/mptable.h"

#include "common/abi/mptable.h"
#include "guest/testguest/text.h"

namespace testguest {
namespace {

using namespace carapace::abi;

const MpFloatingPointer* find_floating_pointer(uint64_t start, uint64_t end) {
  for (uint64_t addr = start; addr + sizeof(MpFloatingPointer) <= end; addr += 16) {
    const auto* fp = reinterpret_cast<const MpFloatingPointer*>(addr);
    if (bytes_equal(fp->signature, "_MP_", 4) && fp->length == 1 &&
        mp_byte_sum(fp, sizeof(*fp)) == 0) {
      return fp;
    }
  }
  return nullptr;
}

}  // namespace

const char* read_mp_table(MpInfo& mp) {
  // Where the spec says to look: the last KiB of base memory (the EBDA, where this project's VMM
  // puts it) and the BIOS ROM area (SeaBIOS).
  const MpFloatingPointer* fp = find_floating_pointer(0x9fc00, 0xa0000);
  if (!fp) fp = find_floating_pointer(0xf0000, 0x100000);
  if (!fp) return "no MP table";
  if (fp->features[0] != 0) return "MP table uses a default configuration, no PCMP table";
  if (fp->config_table == 0) return "MP floating pointer has no configuration table";

  const auto* header = reinterpret_cast<const MpConfigHeader*>(uint64_t{fp->config_table});
  if (!bytes_equal(header->signature, "PCMP", 4)) return "bad MP configuration table signature";
  if (header->base_length < sizeof(MpConfigHeader)) return "MP configuration table too short";
  if (mp_byte_sum(header, header->base_length) != 0) return "bad MP configuration table checksum";

  mp.floating_pointer = reinterpret_cast<uint64_t>(fp);
  mp.config_table = fp->config_table;
  mp.lapic_addr = header->lapic_addr;
  mp.processor_count = 0;
  mp.ioapic_addr = 0;
  mp.isa_irq0_pin = -1;
  int isa_bus = -1;

  const auto* cursor = reinterpret_cast<const uint8_t*>(header + 1);
  const auto* end = reinterpret_cast<const uint8_t*>(header) + header->base_length;
  // Walk by the table length, as Linux does: qboot (QEMU microvm's firmware) leaves entry_count 0.
  mp.entry_count = 0;
  mp.header_entry_count = header->entry_count;
  for (; cursor < end; ++mp.entry_count) {
    if (cursor + mp_entry_size(cursor[0]) > end) return "MP table entries run past the table";
    switch (cursor[0]) {
      case kMpProcessor: {
        const auto* cpu = reinterpret_cast<const carapace::abi::MpProcessor*>(cursor);
        if (!(cpu->flags & 1)) break;
        if (mp.processor_count == MAX_CPUS) return "MP table lists more than MAX_CPUS processors";
        mp.processors[mp.processor_count++] = {cpu->lapic_id, (cpu->flags & 2) != 0};
        break;
      }
      case kMpBus: {
        const auto* bus = reinterpret_cast<const MpBus*>(cursor);
        if (bytes_equal(bus->bus_type, "ISA", 3)) isa_bus = bus->bus_id;
        break;
      }
      case kMpIoapic: {
        const auto* ioapic = reinterpret_cast<const MpIoapic*>(cursor);
        if ((ioapic->flags & 1) && mp.ioapic_addr == 0) mp.ioapic_addr = ioapic->addr;
        break;
      }
      case kMpIoInterrupt: {
        const auto* irq = reinterpret_cast<const MpInterrupt*>(cursor);
        if (irq->irq_type == kMpIrqInt && irq->src_bus == isa_bus && irq->src_irq == 0) {
          mp.isa_irq0_pin = irq->dst_pin;
        }
        break;
      }
      case kMpLocalInterrupt:
        break;
      default:
        return "unknown MP table entry type";
    }
    cursor += mp_entry_size(cursor[0]);
  }
  if (mp.header_entry_count != 0 && mp.header_entry_count != mp.entry_count) {
    return "MP table entry_count does not match its length";
  }
  if (mp.processor_count == 0) return "MP table lists no enabled processor";
  return nullptr;
}

}  // namespace testguest
