// i8042: only the CPU-reset command does anything.
#include "vmm/devices/i8042/i8042.h"

#include <gtest/gtest.h>

#include <memory>

#include "vmm/bus/bus.h"

namespace carapace {
namespace {

constexpr uint64_t kCmd = I8042::kCommandPort - I8042::kDataPort;

TEST(I8042Test, ResetCommandCallsCallback) {
  int resets = 0;
  I8042 dev([&] { ++resets; });
  const uint8_t cmd[1] = {0xfe};
  dev.write(kCmd, cmd);
  EXPECT_EQ(resets, 1);
  dev.write(kCmd, cmd);
  EXPECT_EQ(resets, 2);
}

TEST(I8042Test, OtherWritesDoNothing) {
  int resets = 0;
  I8042 dev([&] { ++resets; });
  for (uint8_t v : {0x00, 0x60, 0xad, 0xd1, 0xff, 0xfd}) {
    const uint8_t b[1] = {v};
    dev.write(kCmd, b);
  }
  const uint8_t fe[1] = {0xfe};
  dev.write(0, fe);  // 0xFE on the data port is not a command
  dev.write(1, fe);
  dev.write(kCmd, {fe, 0});  // empty access
  EXPECT_EQ(resets, 0);
}

TEST(I8042Test, ReadsReturnZeroAndNeverReset) {
  int resets = 0;
  I8042 dev([&] { ++resets; });
  for (uint64_t off = 0; off <= kCmd; ++off) {
    uint8_t b[4] = {0xff, 0xff, 0xff, 0xff};
    dev.read(off, {b, 1});
    EXPECT_EQ(b[0], 0) << "offset " << off;
    EXPECT_EQ(b[1], 0xff) << "read more than asked";
  }
  EXPECT_EQ(resets, 0);
}

TEST(I8042Test, ResetThroughTheBus) {
  int resets = 0;
  IoBus bus;
  ASSERT_TRUE(
      bus.insert(std::make_shared<I8042>([&] { ++resets; }), I8042::kDataPort, 5, "i8042").ok());
  const uint8_t fe[1] = {0xfe};
  ASSERT_TRUE(bus.write(0x64, fe));
  EXPECT_EQ(resets, 1);
  uint8_t status[1] = {0xff};
  ASSERT_TRUE(bus.read(0x64, status));
  EXPECT_EQ(status[0], 0);
  // A 2-byte write at 0x64 runs past the device's last port: not delivered, no reset.
  const uint8_t wide[2] = {0xfe, 0xfe};
  EXPECT_FALSE(bus.write(0x64, wide));
  EXPECT_EQ(resets, 1);
}

}  // namespace
}  // namespace carapace
