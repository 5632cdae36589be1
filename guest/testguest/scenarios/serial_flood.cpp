// serial-flood: a guest that writes its serial port as fast as it can, without waiting for the
// transmitter, the way a hostile or runaway guest would. The VMM must keep what reaches the host
// bounded (a file console's byte cap; docs/security.md #29) and count what it drops. It writes
// 4 KiB blocks with `rep outsb`; how many exits that costs is the host's business (on the PVM
// development hosts about 60 us per byte: 128 KiB take ~8 s).
//
//   testguest.run=serial-flood [testguest.flood.kib=N (default 1024)]
#include "guest/testguest/cmdline.h"
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenario.h"
#include "guest/testguest/serial.h"

namespace testguest {
namespace {

constexpr uint64_t kDefaultKib = 1024;
constexpr uint64_t kMaxKib = 1 << 20;  // 1 GiB: enough to fill any cap

uint64_t kib_param(const BootInfo& boot) {
  char text[24];
  if (boot.cmdline == nullptr ||
      !cmdline_value(boot.cmdline, "testguest.flood.kib=", text, sizeof text))
    return kDefaultKib;
  uint64_t v = 0;
  for (const char* p = text; *p; ++p) {
    if (*p < '0' || *p > '9' || v > kMaxKib) return kDefaultKib;
    v = v * 10 + uint64_t(*p - '0');
  }
  return v;
}

}  // namespace

ScenarioResult run_serial_flood(const BootInfo& boot) {
  static char block[4096];
  for (size_t i = 0; i < sizeof block; ++i)
    block[i] = (i % 64 == 63) ? '\n' : char('a' + i % 26);
  const uint64_t kib = kib_param(boot);
  out << "testguest: serial-flood " << dec(kib) << " KiB\n";
  for (uint64_t done = 0; done < kib; done += 4) {
    const char* data = block;
    uint64_t count = sizeof block;
    asm volatile("rep outsb" : "+S"(data), "+c"(count) : "d"(kUartThr) : "memory");
  }
  out << "\ntestguest: serial-flood done\n";
  return nullptr;
}

}  // namespace testguest
