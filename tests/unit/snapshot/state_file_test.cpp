// The state file container: round trip, and docs/security.md #19 (empty/truncated) and 20 (bit
// flips caught by the checksum before parsing; lengths and counts bounded by the file even when the
// checksum is valid; no value stored twice).
#include "snapshot/state_file.h"

#include <gtest/gtest.h>

#include "tests/unit/snapshot/alloc_tracker.h"
#include "tests/unit/snapshot/snapshot_test_util.h"

namespace carapace {
namespace {

using testing::make_state;

std::vector<uint8_t> encode(const StateFile& s) {
  auto b = encode_state_file(s);
  EXPECT_TRUE(b.ok()) << b.error().describe();
  return b.ok() ? *b : std::vector<uint8_t>{};
}

// Hand-built files: a valid header up to the memory layout, then whatever the test appends,
// sealed with a correct checksum so the parser itself is exercised.
void write_header(ByteWriter& w, uint32_t version = kStateFormatVersion) {
  w.bytes({reinterpret_cast<const uint8_t*>(kStateMagic.data()), kStateMagic.size()});
  w.u32(version);
  w.string("baseline");
  CpuSignature{"AuthenticAMD", 25, 1, 1}.encode(w);
  w.u64(1);  // memory generation
}
void write_layout(ByteWriter& w) {
  w.u32(1);
  w.u64(0);
  w.u64(16 * 4096);
}
std::vector<uint8_t> seal(ByteWriter& w) {
  w.u64(state_checksum(w.data()));
  return w.take();
}

// Decodes and returns the error message; fails the test if decoding succeeded.
std::string decode_error(const std::vector<uint8_t>& bytes) {
  auto r = decode_state_file(bytes);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
  return r.error().message;
}

TEST(StateFileTest, RoundTrip) {
  StateFile s = make_state();
  s.memory.regions = {{GuestAddress(0), 0xc0000000}, {GuestAddress(0x100000000), 0x40000000}};
  s.memory_generation = 42;
  auto bytes = encode(s);
  auto back = decode_state_file(bytes);
  ASSERT_TRUE(back.ok()) << back.error().describe();
  EXPECT_EQ(*back, s);
  ASSERT_NE(back->find(SectionType::kVcpu, 1), nullptr);
  EXPECT_EQ(back->find(SectionType::kVcpu, 1)->payload, std::vector<uint8_t>(40, 0xcd));
  EXPECT_EQ(back->find(SectionType::kVcpu, 2), nullptr);
  // Encoding is deterministic.
  EXPECT_EQ(encode(*back), bytes);
}

TEST(StateFileTest, NoSectionsIsValid) {
  StateFile s = make_state();
  s.sections.clear();
  auto back = decode_state_file(encode(s));
  ASSERT_TRUE(back.ok()) << back.error().describe();
  EXPECT_TRUE(back->sections.empty());
}

TEST(StateFileTest, DuplicateSectionsRefused) {
  StateFile s = make_state();
  EXPECT_FALSE(s.add_section(SectionType::kVcpu, 1, 9, {}).ok());
  EXPECT_FALSE(s.add_section(SectionType::kInvalid, 0, 1, {}).ok());
  s.sections.push_back(s.sections[0]);
  EXPECT_FALSE(encode_state_file(s).ok());

  ByteWriter w;
  write_header(w);
  write_layout(w);
  for (int i = 0; i < 2; ++i) {
    w.u32(static_cast<uint32_t>(SectionType::kDevice));
    w.u32(3);
    w.u32(1);
    w.u64(0);
  }
  EXPECT_NE(decode_error(seal(w)).find("duplicate section device index 3"), std::string::npos);
}

TEST(StateFileTest, SecurityCheck19_EmptyAndEveryTruncationRefused) {
  EXPECT_NE(decode_error({}).find("empty"), std::string::npos);
  auto bytes = encode(make_state());
  for (size_t len = 0; len < bytes.size(); ++len) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + len);
    auto r = decode_state_file(cut);
    ASSERT_FALSE(r.ok()) << "truncated to " << len << " bytes";
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
  }
}

TEST(StateFileTest, SecurityCheck20_EveryBitFlipCaughtBeforeParsing) {
  auto bytes = encode(make_state());
  for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
    auto bad = bytes;
    bad[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    testing::reset_largest_allocation();
    std::string msg = decode_error(bad);
    // Only the magic is looked at before the checksum (a fixed 8-byte compare, no lengths).
    const char* want = bit / 8 < kStateMagic.size() ? "bad magic" : "checksum mismatch";
    ASSERT_NE(msg.find(want), std::string::npos) << "bit " << bit << ": " << msg;
    // Nothing was parsed, so nothing sized by the file was allocated.
    EXPECT_LT(testing::largest_allocation(), 1024u) << "bit " << bit;
  }
}

TEST(StateFileTest, SecurityCheck20_OversizedStringLengthWithValidChecksum) {
  ByteWriter w;
  w.bytes({reinterpret_cast<const uint8_t*>(kStateMagic.data()), kStateMagic.size()});
  w.u32(kStateFormatVersion);
  w.u32(0xffffffff);  // cpu template "length"
  w.bytes(std::vector<uint8_t>(64, 'x'));
  auto bytes = seal(w);
  testing::reset_largest_allocation();
  EXPECT_NE(decode_error(bytes).find("cpu template"), std::string::npos);
  EXPECT_LT(testing::largest_allocation(), 4096u);
}

TEST(StateFileTest, SecurityCheck20_OversizedRegionCountWithValidChecksum) {
  for (uint32_t count : {0xffffffffu, 65u, 3u}) {
    ByteWriter w;
    write_header(w);
    w.u32(count);  // regions claimed; only two are present
    for (int i = 0; i < 2; ++i) {
      w.u64(i * 0x100000);
      w.u64(4096);
    }
    auto bytes = seal(w);
    testing::reset_largest_allocation();
    EXPECT_NE(decode_error(bytes).find("memory region count"), std::string::npos) << count;
    EXPECT_LT(testing::largest_allocation(), 4096u);
  }
}

TEST(StateFileTest, SecurityCheck20_OversizedSectionLengthWithValidChecksum) {
  for (uint64_t len : {~0ull, 1ull << 40, 101ull}) {
    ByteWriter w;
    write_header(w);
    write_layout(w);
    w.u32(static_cast<uint32_t>(SectionType::kVm));
    w.u32(0);
    w.u32(1);
    w.u64(len);
    w.bytes(std::vector<uint8_t>(100, 0));  // only 100 payload bytes present
    auto bytes = seal(w);
    testing::reset_largest_allocation();
    EXPECT_NE(decode_error(bytes).find("section payload"), std::string::npos) << len;
    EXPECT_LT(testing::largest_allocation(), 4096u);
  }
}

TEST(StateFileTest, SecurityCheck20_PartialSectionHeaderAtEndRefused) {
  // Sections run up to the checksum: bytes that do not make a whole section are garbage.
  for (size_t extra : {1, 4, 19}) {
    ByteWriter w;
    write_header(w);
    write_layout(w);
    w.bytes(std::vector<uint8_t>(extra, 1));
    EXPECT_NE(decode_error(seal(w)).find("truncated"), std::string::npos) << extra;
  }
}

TEST(StateFileTest, SecurityCheck20_TooManySectionsRefused) {
  ByteWriter w;
  write_header(w);
  write_layout(w);
  for (uint32_t i = 0; i <= kMaxStateSections; ++i) {
    w.u32(static_cast<uint32_t>(SectionType::kDevice));
    w.u32(i);
    w.u32(1);
    w.u64(0);
  }
  EXPECT_NE(decode_error(seal(w)).find("sections"), std::string::npos);
}

TEST(StateFileTest, SecurityCheck20_BadLayoutWithValidChecksum) {
  struct Case {
    uint64_t start, size;
  };
  for (Case c : {Case{0, 0}, Case{1, 4096}, Case{0, 4095}, Case{~0ull - 4095, 4096},
                 Case{uint64_t{1} << 52, 4096}}) {
    ByteWriter w;
    write_header(w);
    w.u32(1);
    w.u64(c.start);
    w.u64(c.size);
    EXPECT_NE(decode_error(seal(w)).find("memory layout"), std::string::npos) << c.start;
  }
  // Overlapping and unsorted regions.
  ByteWriter w;
  write_header(w);
  w.u32(2);
  w.u64(0x2000);
  w.u64(0x2000);
  w.u64(0x3000);
  w.u64(0x1000);
  EXPECT_NE(decode_error(seal(w)).find("overlaps"), std::string::npos);
  ByteWriter none;
  write_header(none);
  none.u32(0);
  EXPECT_NE(decode_error(seal(none)).find("no RAM"), std::string::npos);
}

TEST(StateFileTest, WrongMagicRefused) {
  auto bytes = encode(make_state());
  bytes[0] = 'X';
  // Even with a checksum that matches, the magic decides.
  std::vector<uint8_t> body(bytes.begin(), bytes.end() - 8);
  ByteWriter w;
  w.bytes(body);
  EXPECT_NE(decode_error(seal(w)).find("bad magic"), std::string::npos);
  std::vector<uint8_t> text(100, 'a');
  EXPECT_NE(decode_error(text).find("bad magic"), std::string::npos);
}

TEST(StateFileTest, WrongVersionNamesBothVersions) {
  ByteWriter w;
  write_header(w, 2);
  write_layout(w);
  EXPECT_NE(decode_error(seal(w)).find("snapshot format version 2, this carapace reads 1"),
            std::string::npos);
}

TEST(StateFileTest, OversizedFileRefusedBeforeChecksum) {
  std::vector<uint8_t> huge(kMaxStateFileSize + 1, 0);
  EXPECT_NE(decode_error(huge).find("above the"), std::string::npos);
}

TEST(StateFileTest, EncodeRefusesWhatDecodeWould) {
  StateFile s = make_state();
  s.cpu_template = std::string(kMaxCpuTemplateNameLen + 1, 'x');
  EXPECT_FALSE(encode_state_file(s).ok());
  s = make_state();
  s.memory.regions.clear();
  EXPECT_FALSE(encode_state_file(s).ok());
}

TEST(StateFileTest, UnknownSectionTypesAreOpaque) {
  StateFile s = make_state();
  ASSERT_TRUE(s.add_section(0x1234, 0, 1, {5}).ok());
  auto back = decode_state_file(encode(s));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->sections.back().type, 0x1234u);
  EXPECT_EQ(section_type_name(0x1234), "type-4660");
  EXPECT_EQ(section_type_name(3), "vcpu");
}

TEST(CpuSignatureTest, DecodesCpuidLeaf1) {
  auto skx = cpu_signature_from_cpuid("GenuineIntel", 0x00050654);
  EXPECT_EQ(skx, (CpuSignature{"GenuineIntel", 6, 0x55, 4}));
  auto zen3 = cpu_signature_from_cpuid("AuthenticAMD", 0x00a20f10);
  EXPECT_EQ(zen3, (CpuSignature{"AuthenticAMD", 25, 0x21, 0}));
  EXPECT_EQ(zen3.describe(), "AuthenticAMD family 25 model 33 stepping 0");
}

TEST(CpuSignatureTest, HostSignatureLooksSane) {
  CpuSignature h = host_cpu_signature();
  EXPECT_EQ(h.vendor.size(), 12u);
  EXPECT_GT(h.family, 0u);
  EXPECT_EQ(h, host_cpu_signature());
}

}  // namespace
}  // namespace carapace
