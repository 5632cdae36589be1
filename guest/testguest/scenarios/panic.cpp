// panic: reports a guest panic the way Linux's pvpanic driver does, by writing PANICKED (bit 0)
// to I/O port 0x505 (at CPL3: the guest runs with IOPL 3). The VMM must end the run as a guest
// panic (carapace: exit status 6), not a reset; this scenario never prints PASS. If the write
// does not end the VM, it fails after a while.
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenario.h"

namespace testguest {

namespace {
constexpr uint16_t kPvPanicPort = 0x505;
constexpr uint8_t kPanicked = 1;
}  // namespace

ScenarioResult run_panic(const BootInfo&) {
  const uint8_t supported = inb(kPvPanicPort);
  out << "testguest: pvpanic supports " << hex(supported) << ", panicking now\n";
  if ((supported & kPanicked) == 0) return "no pvpanic device at port 0x505";
  outb(kPvPanicPort, kPanicked);
  Deadline deadline(10'000'000'000);
  while (!deadline.expired())
    cpu_relax();
  return "the VM kept running after a pvpanic write";
}

}  // namespace testguest
