#include "guest/testguest/reset.h"

#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"

namespace testguest {

void reset_vm() {
  console_flush();
  outb(0x64, 0xfe);
  // A machine that resets asynchronously (QEMU's i8042) gets a moment to act first; either way the
  // VM ends up reset.
  Deadline deadline(10'000'000);
  while (!deadline.expired())
    cpu_relax();
  cpl0_triple_fault();
}

}  // namespace testguest
