// The MP table parsed back the way a guest does (Intel MP spec 1.4, chapter 4; Linux mpparse.c):
// find the floating pointer, verify both checksums, walk the entries.
#include "vmm/boot/mptable.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "vmm/memory/layout.h"

namespace carapace {
namespace {

using namespace layout;

struct Processor {
  uint8_t apic_id, version, flags;
};
struct Interrupt {
  uint8_t kind, irq_type;
  uint16_t flags;
  uint8_t bus, src_irq, dst_apic, dst_pin;
};
struct ParsedTable {
  uint32_t lapic_addr = 0;
  std::vector<Processor> cpus;
  std::vector<std::string> buses;
  std::vector<std::pair<uint8_t, uint32_t>> ioapics;  // id, address
  std::vector<Interrupt> irqs;                        // I/O (3) and local (4)
  uint64_t end = 0;                                   // one past the table
};

uint8_t sum(const std::vector<uint8_t>& b, size_t n) {
  uint8_t s = 0;
  for (size_t i = 0; i < n; ++i)
    s += b[i];
  return s;
}
uint16_t u16(const uint8_t* p) {
  return uint16_t(p[0] | p[1] << 8);
}
uint32_t u32(const uint8_t* p) {
  return u16(p) | uint32_t(u16(p + 2)) << 16;
}

std::vector<uint8_t> read(const GuestMemory& mem, uint64_t addr, size_t n) {
  std::vector<uint8_t> b(n);
  EXPECT_TRUE(mem.read(GuestAddress(addr), b).ok());
  return b;
}

// Parses with gtest assertions; a malformed table fails the calling test.
void parse(const GuestMemory& mem, ParsedTable& out) {
  auto fp = read(mem, kEbdaStart, 16);
  ASSERT_EQ(std::memcmp(fp.data(), "_MP_", 4), 0);
  ASSERT_EQ(fp[8], 1) << "floating pointer length (16-byte units)";
  EXPECT_EQ(fp[9], 4) << "spec revision 1.4";
  EXPECT_EQ(sum(fp, 16), 0) << "floating pointer checksum";
  EXPECT_EQ(fp[11], 0) << "feature byte 1: 0 means a configuration table is present";
  uint32_t table = u32(&fp[4]);
  ASSERT_GE(table, kEbdaStart);
  ASSERT_LT(table, kHighMemStart);

  auto hdr = read(mem, table, 44);
  ASSERT_EQ(std::memcmp(hdr.data(), "PCMP", 4), 0);
  uint16_t base_length = u16(&hdr[4]);
  ASSERT_GE(base_length, 44);
  EXPECT_EQ(hdr[6], 4) << "spec revision 1.4";
  auto body = read(mem, table, base_length);
  EXPECT_EQ(sum(body, base_length), 0) << "configuration table checksum";
  uint16_t count = u16(&hdr[34]);
  out.lapic_addr = u32(&hdr[36]);
  EXPECT_EQ(u16(&hdr[40]), 0) << "no extended table";
  out.end = table + base_length;

  size_t pos = 44;
  for (uint16_t i = 0; i < count; ++i) {
    ASSERT_LT(pos, base_length) << "entry " << i << " beyond base_length";
    const uint8_t* e = &body[pos];
    size_t len = e[0] == 0 ? 20 : 8;
    ASSERT_LE(pos + len, base_length);
    switch (e[0]) {
      case 0:
        out.cpus.push_back({e[1], e[2], e[3]});
        break;
      case 1:
        out.buses.emplace_back(reinterpret_cast<const char*>(e + 2), 6);
        EXPECT_EQ(e[1], out.buses.size() - 1) << "bus ids are dense from 0";
        break;
      case 2:
        EXPECT_EQ(e[3] & 1, 1) << "IOAPIC enabled";
        out.ioapics.emplace_back(e[1], u32(e + 4));
        break;
      case 3:
      case 4:
        out.irqs.push_back({e[0], e[1], u16(e + 2), e[4], e[5], e[6], e[7]});
        break;
      default:
        FAIL() << "unknown entry type " << int(e[0]);
    }
    pos += len;
  }
  EXPECT_EQ(pos, base_length) << "entry_count does not cover base_length";
}

GuestMemory low_ram() {
  auto m = GuestMemory::create_anonymous({{GuestAddress(0), 2 * kMiB}});
  EXPECT_TRUE(m.ok());
  return std::move(m).value();
}

const Interrupt* find_irq(const ParsedTable& t, uint8_t kind, uint8_t src_irq, uint8_t irq_type) {
  for (const auto& i : t.irqs)
    if (i.kind == kind && i.src_irq == src_irq && i.irq_type == irq_type) return &i;
  return nullptr;
}

TEST(MpTableTest, FourCpusParseBack) {
  auto mem = low_ram();
  ASSERT_TRUE(write_mptable(mem, 4).ok());
  ParsedTable t;
  ASSERT_NO_FATAL_FAILURE(parse(mem, t));
  EXPECT_EQ(t.lapic_addr, kLapicAddr);
  ASSERT_EQ(t.cpus.size(), 4u);
  for (uint8_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(int(i));
    EXPECT_EQ(t.cpus[i].apic_id, i);
    EXPECT_EQ(t.cpus[i].flags & 1, 1) << "enabled";
    EXPECT_EQ((t.cpus[i].flags >> 1) & 1, i == 0 ? 1 : 0) << "BSP flag only on CPU 0";
  }
  ASSERT_EQ(t.buses.size(), 1u);
  EXPECT_EQ(t.buses[0], "ISA   ");
  ASSERT_EQ(t.ioapics.size(), 1u);
  EXPECT_EQ(t.ioapics[0].first, 4) << "IOAPIC id follows the CPUs";
  EXPECT_EQ(t.ioapics[0].second, kIoapicAddr);
}

TEST(MpTableTest, InterruptRouting) {
  auto mem = low_ram();
  ASSERT_TRUE(write_mptable(mem, 2).ok());
  ParsedTable t;
  ASSERT_NO_FATAL_FAILURE(parse(mem, t));
  const uint8_t ioapic = 2;
  // ISA IRQ n is wired to IOAPIC pin n, as KVM's default GSI routing does (the PIT's IRQ 0
  // included); IRQ 2, the PIC cascade, has no entry.
  for (uint8_t irq = 0; irq < kIoapicPins; ++irq) {
    SCOPED_TRACE(int(irq));
    const Interrupt* e = find_irq(t, 3, irq, 0);
    if (irq == 2) {
      EXPECT_EQ(e, nullptr);
      continue;
    }
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->dst_pin, irq);
    EXPECT_EQ(e->flags, 0) << "conforms to the bus: ISA edge, active high";
  }
  EXPECT_EQ(find_irq(t, 3, 0, 3), nullptr) << "no ExtINT entry on the IOAPIC";
  for (const auto& i : t.irqs) {
    if (i.kind != 3) continue;
    EXPECT_EQ(i.bus, 0);
    EXPECT_EQ(i.dst_apic, ioapic);
    EXPECT_LT(i.dst_pin, kIoapicPins);
  }
  // Every local APIC: LINT0 ExtINT, LINT1 NMI.
  const Interrupt* lint0 = find_irq(t, 4, 0, 3);
  ASSERT_NE(lint0, nullptr);
  EXPECT_EQ(lint0->dst_apic, 0xff);
  EXPECT_EQ(lint0->dst_pin, 0);
  const Interrupt* lint1 = find_irq(t, 4, 0, 1);
  ASSERT_NE(lint1, nullptr);
  EXPECT_EQ(lint1->dst_apic, 0xff);
  EXPECT_EQ(lint1->dst_pin, 1);
}

TEST(MpTableTest, EveryIoapicPinHasAtMostOneSource) {
  auto mem = low_ram();
  ASSERT_TRUE(write_mptable(mem, 1).ok());
  ParsedTable t;
  ASSERT_NO_FATAL_FAILURE(parse(mem, t));
  std::vector<int> uses(kIoapicPins, 0);
  for (const auto& i : t.irqs)
    if (i.kind == 3) ++uses[i.dst_pin];
  for (uint32_t pin = 0; pin < kIoapicPins; ++pin)
    EXPECT_LE(uses[pin], 1) << "pin " << pin;
}

TEST(MpTableTest, MaxCpusFitsBelowOneMiB) {
  auto mem = low_ram();
  ASSERT_TRUE(write_mptable(mem, kMpTableMaxCpus).ok());
  ParsedTable t;
  ASSERT_NO_FATAL_FAILURE(parse(mem, t));
  ASSERT_EQ(t.cpus.size(), 254u);
  EXPECT_EQ(t.cpus.back().apic_id, 253);
  EXPECT_EQ(t.ioapics[0].first, 254);
  EXPECT_LE(t.end, kHighMemStart);
}

TEST(MpTableTest, RefusesZeroAndTooManyCpus) {
  auto mem = low_ram();
  EXPECT_FALSE(write_mptable(mem, 0).ok());
  EXPECT_FALSE(write_mptable(mem, 255).ok());
  EXPECT_FALSE(write_mptable(mem, UINT32_MAX).ok());
  auto fp = read(mem, kEbdaStart, 4);
  EXPECT_EQ(fp, std::vector<uint8_t>(4, 0)) << "nothing written on refusal";
}

}  // namespace
}  // namespace carapace
