// The pvpanic port: bit 0 written ends the run as a guest panic (docs/security.md #31); anything
// else is harmless.
#include "vmm/devices/pvpanic/pvpanic.h"

#include <gtest/gtest.h>

#include <array>

namespace carapace {
namespace {

TEST(PvPanicTest, ReportsSupportedEventsAndPanicsOnBitZero) {
  int panics = 0;
  PvPanic dev([&] { ++panics; });
  std::array<uint8_t, 1> b{};
  dev.read(0, b);
  EXPECT_EQ(b[0], PvPanic::kPanicked | PvPanic::kCrashLoaded);
  const uint8_t crash_loaded = PvPanic::kCrashLoaded, zero = 0, panicked = PvPanic::kPanicked;
  dev.write(0, std::span(&crash_loaded, 1));
  dev.write(0, std::span(&zero, 1));
  dev.write(0, {});
  EXPECT_EQ(panics, 0);
  dev.write(0, std::span(&panicked, 1));
  EXPECT_EQ(panics, 1);
  std::array<uint8_t, 4> wide{};
  dev.read(0, wide);  // wider reads are filled, not overrun
  EXPECT_EQ(wide[1], 0);
}

}  // namespace
}  // namespace carapace
