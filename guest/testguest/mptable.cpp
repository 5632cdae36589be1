#include "guest/testguest/mptable.h"

#include "guest/testguest/text.h"

namespace testguest {
namespace {

// Layouts from the MP specification 1.4, chapter 4.
struct [[gnu::packed]] FloatingPointer {
  char signature[4];  // "_MP_"
  uint32_t config_table;
  uint8_t length;  // in 16-byte units: 1
  uint8_t spec_rev;
  uint8_t checksum;
  uint8_t features[5];  // features[0] != 0: a default configuration, no table
};
static_assert(sizeof(FloatingPointer) == 16);

struct [[gnu::packed]] ConfigHeader {
  char signature[4];  // "PCMP"
  uint16_t base_length;
  uint8_t spec_rev;
  uint8_t checksum;
  char oem_id[8];
  char product_id[12];
  uint32_t oem_table;
  uint16_t oem_table_size;
  uint16_t entry_count;
  uint32_t lapic_addr;
  uint16_t ext_length;
  uint8_t ext_checksum;
  uint8_t reserved;
};
static_assert(sizeof(ConfigHeader) == 44);

enum EntryType : uint8_t { kProcessor = 0, kBus = 1, kIoapic = 2, kIoInterrupt = 3, kLocalInt = 4 };

struct [[gnu::packed]] ProcessorEntry {
  uint8_t type;
  uint8_t apic_id;
  uint8_t apic_version;
  uint8_t flags;  // bit 0: enabled, bit 1: bootstrap processor
  uint32_t signature;
  uint32_t features;
  uint8_t reserved[8];
};
static_assert(sizeof(ProcessorEntry) == 20);

struct [[gnu::packed]] BusEntry {
  uint8_t type;
  uint8_t bus_id;
  char bus_type[6];  // "ISA   "
};

struct [[gnu::packed]] IoapicEntry {
  uint8_t type;
  uint8_t id;
  uint8_t version;
  uint8_t flags;  // bit 0: enabled
  uint32_t addr;
};

struct [[gnu::packed]] InterruptEntry {
  uint8_t type;
  uint8_t interrupt_type;  // 0: vectored INT
  uint16_t flags;
  uint8_t source_bus;
  uint8_t source_irq;
  uint8_t dest_id;
  uint8_t dest_pin;
};

uint8_t sum_bytes(const void* data, uint32_t length) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  uint8_t sum = 0;
  for (uint32_t i = 0; i < length; ++i)
    sum = static_cast<uint8_t>(sum + bytes[i]);
  return sum;
}

const FloatingPointer* find_floating_pointer(uint64_t start, uint64_t end) {
  for (uint64_t addr = start; addr + sizeof(FloatingPointer) <= end; addr += 16) {
    const auto* fp = reinterpret_cast<const FloatingPointer*>(addr);
    if (bytes_equal(fp->signature, "_MP_", 4) && fp->length == 1 &&
        sum_bytes(fp, sizeof(*fp)) == 0) {
      return fp;
    }
  }
  return nullptr;
}

uint32_t entry_size(uint8_t type) {
  return type == kProcessor ? 20 : 8;
}

}  // namespace

const char* read_mp_table(MpInfo& mp) {
  // Where the spec says to look: the last KiB of base memory (the EBDA, where this project's VMM
  // puts it) and the BIOS ROM area (SeaBIOS).
  const FloatingPointer* fp = find_floating_pointer(0x9fc00, 0xa0000);
  if (!fp) fp = find_floating_pointer(0xf0000, 0x100000);
  if (!fp) return "no MP table";
  if (fp->features[0] != 0) return "MP table uses a default configuration, no PCMP table";
  if (fp->config_table == 0) return "MP floating pointer has no configuration table";

  const auto* header = reinterpret_cast<const ConfigHeader*>(uint64_t{fp->config_table});
  if (!bytes_equal(header->signature, "PCMP", 4)) return "bad MP configuration table signature";
  if (header->base_length < sizeof(ConfigHeader)) return "MP configuration table too short";
  if (sum_bytes(header, header->base_length) != 0) return "bad MP configuration table checksum";

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
    if (cursor + entry_size(cursor[0]) > end) return "MP table entries run past the table";
    switch (cursor[0]) {
      case kProcessor: {
        const auto* cpu = reinterpret_cast<const ProcessorEntry*>(cursor);
        if (!(cpu->flags & 1)) break;
        if (mp.processor_count == MAX_CPUS) return "MP table lists more than MAX_CPUS processors";
        mp.processors[mp.processor_count++] = {cpu->apic_id, (cpu->flags & 2) != 0};
        break;
      }
      case kBus: {
        const auto* bus = reinterpret_cast<const BusEntry*>(cursor);
        if (bytes_equal(bus->bus_type, "ISA", 3)) isa_bus = bus->bus_id;
        break;
      }
      case kIoapic: {
        const auto* ioapic = reinterpret_cast<const IoapicEntry*>(cursor);
        if ((ioapic->flags & 1) && mp.ioapic_addr == 0) mp.ioapic_addr = ioapic->addr;
        break;
      }
      case kIoInterrupt: {
        const auto* irq = reinterpret_cast<const InterruptEntry*>(cursor);
        if (irq->interrupt_type == 0 && irq->source_bus == isa_bus && irq->source_irq == 0) {
          mp.isa_irq0_pin = irq->dest_pin;
        }
        break;
      }
      case kLocalInt:
        break;
      default:
        return "unknown MP table entry type";
    }
    cursor += entry_size(cursor[0]);
  }
  if (mp.header_entry_count != 0 && mp.header_entry_count != mp.entry_count) {
    return "MP table entry_count does not match its length";
  }
  if (mp.processor_count == 0) return "MP table lists no enabled processor";
  return nullptr;
}

}  // namespace testguest
