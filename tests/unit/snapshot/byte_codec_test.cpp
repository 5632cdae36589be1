// ByteWriter/ByteReader: round trips, and the bounds every read keeps (docs/security.md #19, #20).
#include "common/codec/byte_codec.h"

#include <gtest/gtest.h>

namespace carapace {
namespace {

TEST(ByteCodecTest, RoundTripsEveryType) {
  ByteWriter w;
  w.u8(0x12);
  w.u16(0x3456);
  w.u32(0x789abcde);
  w.u64(0x0123456789abcdefull);
  w.boolean(true);
  w.string("hello");
  std::vector<uint8_t> blob = {9, 8, 7};
  w.blob(blob);
  w.bytes(blob);

  ByteReader r(w.data());
  EXPECT_EQ(*r.u8("a"), 0x12);
  EXPECT_EQ(*r.u16("b"), 0x3456);
  EXPECT_EQ(*r.u32("c"), 0x789abcdeu);
  EXPECT_EQ(*r.u64("d"), 0x0123456789abcdefull);
  EXPECT_TRUE(*r.boolean("e"));
  EXPECT_EQ(*r.string("f", 16), "hello");
  EXPECT_EQ(*r.blob("g", 16), blob);
  auto raw = r.bytes("h", 3);
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(std::vector<uint8_t>(raw->begin(), raw->end()), blob);
  EXPECT_TRUE(r.at_end());
  EXPECT_TRUE(r.expect_end("end").ok());
}

TEST(ByteCodecTest, LittleEndianOnDisk) {
  ByteWriter w;
  w.u32(0x11223344);
  EXPECT_EQ(w.data(), (std::vector<uint8_t>{0x44, 0x33, 0x22, 0x11}));
}

TEST(ByteCodecTest, SecurityCheck19_EveryReadIsBounded) {
  std::vector<uint8_t> three = {1, 2, 3};
  ByteReader r(three);
  auto v = r.u32("field");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(v.error().message.find("field at offset 0"), std::string::npos);
  // A failed read consumes nothing.
  EXPECT_EQ(r.remaining(), 3u);
  EXPECT_FALSE(r.u64("x").ok());
  EXPECT_FALSE(r.bytes("x", 4).ok());
  EXPECT_TRUE(r.bytes("x", 3).ok());
  EXPECT_FALSE(r.u8("x").ok());
  ByteReader empty({});
  EXPECT_FALSE(empty.u8("x").ok());
}

TEST(ByteCodecTest, SecurityCheck20_LengthsBoundedByRemainingBytes) {
  ByteWriter w;
  w.u64(~0ull);  // a blob that claims 2^64-1 bytes
  EXPECT_FALSE(ByteReader(w.data()).blob("b", ~0ull).ok());
  ByteWriter s;
  s.u32(5);  // a string that claims 5 bytes but has 4
  s.bytes(std::vector<uint8_t>{'a', 'b', 'c', 'd'});
  EXPECT_FALSE(ByteReader(s.data()).string("s", 100).ok());
  ByteWriter m;
  m.string("toolong");
  EXPECT_FALSE(ByteReader(m.data()).string("s", 3).ok());
}

TEST(ByteCodecTest, SecurityCheck20_CountsBoundedBeforeAllocation) {
  ByteWriter w;
  w.u32(1000);  // 1000 items of >= 16 bytes in a 100-byte buffer
  w.bytes(std::vector<uint8_t>(96, 0));
  EXPECT_FALSE(ByteReader(w.data()).count("n", 16, 100000).ok());
  // The same count fits when items are 0 bytes... but not past max_count.
  EXPECT_FALSE(ByteReader(w.data()).count("n", 0, 999).ok());
  EXPECT_TRUE(ByteReader(w.data()).count("n", 0, 1000).ok());
  // 6 items of 16 bytes fit in 96.
  ByteWriter ok;
  ok.u32(6);
  ok.bytes(std::vector<uint8_t>(96, 0));
  EXPECT_EQ(*ByteReader(ok.data()).count("n", 16, 100), 6u);
  // count * size overflowing 64 bits is refused, not wrapped.
  ByteWriter big;
  big.u32(0xffffffff);
  EXPECT_FALSE(ByteReader(big.data()).count("n", ~0ull, 0xffffffff).ok());
}

TEST(ByteCodecTest, BooleansAreZeroOrOne) {
  std::vector<uint8_t> two = {2};
  EXPECT_FALSE(ByteReader(two).boolean("b").ok());
}

TEST(ByteCodecTest, ExpectEndRefusesTrailingBytes) {
  std::vector<uint8_t> d = {1, 2};
  ByteReader r(d);
  ASSERT_TRUE(r.u8("a").ok());
  EXPECT_FALSE(r.expect_end("x").ok());
}

}  // namespace
}  // namespace carapace
