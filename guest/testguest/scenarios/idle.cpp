// idle: a guest that has done its work and waits, the state a pooled or snapshotted sandbox sits
// in. It fills `testguest.mib` MiB of RAM with a pattern (so a snapshot holds real data, not
// holes), prints a ready line and parks the CPU in `hlt` with interrupts off: it costs no CPU and
// never ends by itself; the host stops it. Used by the restore benchmark and the pool tests.
//
//   testguest.run=idle [testguest.mib=N (default 16)]
#include "guest/testguest/cmdline.h"
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenario.h"

namespace testguest {
namespace {

constexpr uint64_t kRegionBase = 64ull << 20;  // above the image, as in the counter scenario

uint64_t mib_param(const BootInfo& boot) {
  char text[24];
  if (boot.cmdline == nullptr || !cmdline_value(boot.cmdline, "testguest.mib=", text, sizeof text))
    return 16;
  uint64_t v = 0;
  for (const char* p = text; *p; ++p) {
    if (*p < '0' || *p > '9' || v > 4096) return 16;
    v = v * 10 + uint64_t(*p - '0');
  }
  return v;
}

bool region_is_ram(const BootInfo& boot, uint64_t base, uint64_t size) {
  for (uint32_t i = 0; i < boot.memory.count; ++i) {
    const MemRange& r = boot.memory.ranges[i];
    if (r.type == 1 && base >= r.addr && base + size <= r.addr + r.size) return true;
  }
  return false;
}

}  // namespace

ScenarioResult run_idle(const BootInfo& boot) {
  const uint64_t mib = mib_param(boot);
  if (mib != 0 && !region_is_ram(boot, kRegionBase, mib << 20))
    return "region does not fit in RAM (use a larger --mem or a smaller testguest.mib)";
  auto* words = reinterpret_cast<volatile uint64_t*>(kRegionBase);
  const uint64_t count = (mib << 20) / sizeof(uint64_t);
  for (uint64_t i = 0; i < count; ++i)
    words[i] = (i + 1) * 0x9e3779b97f4a7c15ull;
  out << "testguest: idle ready " << dec(mib) << " MiB\n";
  cpl0_halt_forever();
}

}  // namespace testguest
