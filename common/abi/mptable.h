// The Intel MultiProcessor Specification 1.4 table (chapter 4): the layouts the VMM writes and the
// test guest parses back. Header-only and freestanding-safe: the test guest includes it too.
#pragma once

#include <cstddef>
#include <cstdint>

namespace carapace::abi {

struct [[gnu::packed]] MpFloatingPointer {
  char signature[4];  // "_MP_"
  uint32_t config_table;
  uint8_t length;  // in 16-byte units: 1
  uint8_t spec_rev;
  uint8_t checksum;
  uint8_t features[5];  // features[0] != 0: a default configuration, no table
};

struct [[gnu::packed]] MpConfigHeader {
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

// The first byte of every entry (numbered as in Linux's mpspec_def.h).
enum MpEntryType : uint8_t {
  kMpProcessor = 0,
  kMpBus,
  kMpIoapic,
  kMpIoInterrupt,
  kMpLocalInterrupt
};

struct [[gnu::packed]] MpProcessor {
  uint8_t type;  // kMpProcessor
  uint8_t lapic_id;
  uint8_t lapic_version;
  uint8_t flags;  // bit 0 enabled, bit 1 bootstrap processor
  uint32_t signature;
  uint32_t features;
  uint32_t reserved[2];
};

struct [[gnu::packed]] MpBus {
  uint8_t type;  // kMpBus
  uint8_t bus_id;
  char bus_type[6];  // "ISA   "
};

struct [[gnu::packed]] MpIoapic {
  uint8_t type;  // kMpIoapic
  uint8_t apic_id;
  uint8_t version;
  uint8_t flags;  // bit 0 enabled
  uint32_t addr;
};

// An I/O (kMpIoInterrupt) or local (kMpLocalInterrupt) interrupt assignment.
struct [[gnu::packed]] MpInterrupt {
  uint8_t type;
  uint8_t irq_type;    // kMpIrqInt, kMpIrqNmi, kMpIrqExtInt
  uint16_t irq_flags;  // 0: conforms to the bus (ISA: edge, active high)
  uint8_t src_bus;
  uint8_t src_irq;
  uint8_t dst_apic;
  uint8_t dst_pin;
};

static_assert(sizeof(MpFloatingPointer) == 16 && sizeof(MpConfigHeader) == 44);
static_assert(sizeof(MpProcessor) == 20 && sizeof(MpBus) == 8 && sizeof(MpIoapic) == 8 &&
              sizeof(MpInterrupt) == 8);

inline constexpr uint8_t kMpIrqInt = 0, kMpIrqNmi = 1, kMpIrqExtInt = 3;

// Every entry but a processor is 8 bytes.
constexpr uint32_t mp_entry_size(uint8_t type) {
  return type == kMpProcessor ? sizeof(MpProcessor) : 8;
}

// The floating pointer and the configuration table each carry a checksum byte that makes all
// their bytes sum to zero (mod 256).
inline uint8_t mp_byte_sum(const void* data, size_t length) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  uint8_t sum = 0;
  for (size_t i = 0; i < length; ++i)
    sum = static_cast<uint8_t>(sum + bytes[i]);
  return sum;
}

}  // namespace carapace::abi
