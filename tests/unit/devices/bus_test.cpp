// IoBus: range bookkeeping and dispatch. An access must lie wholly inside one device's range, so a
// device never sees an offset past its end (docs/security.md #9).
#include "vmm/bus/bus.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace carapace {
namespace {

// Records every access; reads return offset-derived bytes.
class RecordingDevice : public BusDevice {
 public:
  struct Access {
    bool write;
    uint64_t offset;
    std::vector<uint8_t> data;
  };
  void read(uint64_t offset, std::span<uint8_t> data) override {
    for (size_t i = 0; i < data.size(); ++i)
      data[i] = static_cast<uint8_t>(0xa0 + offset + i);
    log.push_back({false, offset, {data.begin(), data.end()}});
  }
  void write(uint64_t offset, std::span<const uint8_t> data) override {
    log.push_back({true, offset, {data.begin(), data.end()}});
  }
  std::vector<Access> log;
};

TEST(IoBusTest, RefusesEmptyAndWrappingRanges) {
  IoBus bus;
  auto dev = std::make_shared<RecordingDevice>();
  EXPECT_FALSE(bus.insert(dev, 0x100, 0, "empty").ok());
  EXPECT_FALSE(bus.insert(dev, UINT64_MAX, 2, "wraps").ok());
  EXPECT_FALSE(bus.insert(dev, 0x10, UINT64_MAX, "wraps").ok());
  // Nothing was registered by the refused inserts.
  uint8_t b[1];
  EXPECT_FALSE(bus.read(0x100, b));
  EXPECT_FALSE(bus.read(UINT64_MAX, b));
  EXPECT_TRUE(dev->log.empty());
}

TEST(IoBusTest, RefusesOverlapButAllowsAdjacentRanges) {
  IoBus bus;
  auto dev = std::make_shared<RecordingDevice>();
  ASSERT_TRUE(bus.insert(dev, 0x100, 0x10, "a").ok());
  auto overlap = bus.insert(dev, 0x10f, 0x10, "b");
  ASSERT_FALSE(overlap.ok());
  EXPECT_NE(overlap.error().message.find("overlaps a"), std::string::npos);
  EXPECT_FALSE(bus.insert(dev, 0xf0, 0x11, "c").ok());
  EXPECT_FALSE(bus.insert(dev, 0x104, 1, "inside").ok());
  EXPECT_FALSE(bus.insert(dev, 0, 0x1000, "around").ok());
  EXPECT_TRUE(bus.insert(dev, 0x110, 0x10, "after").ok());
  EXPECT_TRUE(bus.insert(dev, 0xf0, 0x10, "before").ok());
}

TEST(IoBusTest, DispatchesWithOffsetsToTheRightDevice) {
  IoBus bus;
  auto a = std::make_shared<RecordingDevice>(), b = std::make_shared<RecordingDevice>();
  // Inserted out of order: lookups must still find each range.
  ASSERT_TRUE(bus.insert(b, 0x3f8, 8, "b").ok());
  ASSERT_TRUE(bus.insert(a, 0x60, 5, "a").ok());
  uint8_t data[2] = {};
  ASSERT_TRUE(bus.read(0x3fa, data));
  EXPECT_EQ(data[0], 0xa2);
  EXPECT_EQ(data[1], 0xa3);
  const uint8_t out[1] = {0xfe};
  ASSERT_TRUE(bus.write(0x64, out));
  ASSERT_EQ(b->log.size(), 1u);
  EXPECT_FALSE(b->log[0].write);
  EXPECT_EQ(b->log[0].offset, 2u);
  EXPECT_EQ(b->log[0].data.size(), 2u);
  ASSERT_EQ(a->log.size(), 1u);
  EXPECT_TRUE(a->log[0].write);
  EXPECT_EQ(a->log[0].offset, 4u);
  EXPECT_EQ(a->log[0].data, std::vector<uint8_t>{0xfe});
}

TEST(IoBusTest, SecurityCheck9_StraddlingAccessIsNotDelivered) {
  IoBus bus;
  auto dev = std::make_shared<RecordingDevice>(), next = std::make_shared<RecordingDevice>();
  ASSERT_TRUE(bus.insert(dev, 0x3f8, 8, "serial").ok());
  ASSERT_TRUE(bus.insert(next, 0x400, 8, "next").ok());
  uint8_t wide[8] = {};
  EXPECT_FALSE(bus.read(0x3fc, wide));  // 4 bytes inside, 4 in the next device
  EXPECT_FALSE(bus.write(0x3ff, {wide, 2}));
  EXPECT_FALSE(bus.read(0x3f7, {wide, 2}));  // starts before the range
  EXPECT_TRUE(bus.read(0x3f8, wide));        // exactly the whole range
  EXPECT_TRUE(bus.read(0x3ff, {wide, 1}));   // last byte
  ASSERT_EQ(dev->log.size(), 2u);
  EXPECT_EQ(dev->log[1].offset, 7u);
  EXPECT_TRUE(next->log.empty());
}

TEST(IoBusTest, UnclaimedAddressesReturnFalse) {
  IoBus bus;
  auto dev = std::make_shared<RecordingDevice>();
  ASSERT_TRUE(bus.insert(dev, 0x1000, 0x100, "dev").ok());
  uint8_t b[4] = {1, 2, 3, 4};
  EXPECT_FALSE(bus.read(0, b));
  EXPECT_FALSE(bus.read(0xfff, {b, 1}));
  EXPECT_FALSE(bus.write(0x1100, b));
  EXPECT_FALSE(bus.read(UINT64_MAX, {b, 1}));
  EXPECT_FALSE(bus.read(UINT64_MAX - 1, b));
  EXPECT_TRUE(dev->log.empty());
  // A range ending right below 2^64 is reachable up to its last byte.
  auto top = std::make_shared<RecordingDevice>();
  ASSERT_TRUE(bus.insert(top, UINT64_MAX - 8, 8, "top").ok());
  EXPECT_TRUE(bus.read(UINT64_MAX - 1, {b, 1}));
  EXPECT_FALSE(bus.read(UINT64_MAX - 1, {b, 2}));
}

}  // namespace
}  // namespace carapace
