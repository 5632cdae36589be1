// testguest_main: the BSP's first CPL3 code. Reads the boot handover, picks the scenario named by
// `testguest.run=` and prints the START / PASS / FAIL lines the host test looks for.
#include <cstdint>

#include "guest/testguest/boot_info.h"
#include "guest/testguest/cmdline.h"
#include "guest/testguest/console.h"
#include "guest/testguest/reset.h"
#include "guest/testguest/scenario.h"

namespace testguest {
namespace {

BootInfo boot_info;  // static: the memory map copy is 3 KiB
char name[48] = "(early)";
bool result_printed = false;

// The name is echoed back on every result line; keep it printable.
void read_scenario_name(const char* cmdline) {
  if (!cmdline_value(cmdline, "testguest.run=", name, sizeof(name)) || name[0] == '\0') {
    const char none[] = "(none)";
    for (unsigned i = 0; i < sizeof(none); ++i)
      name[i] = none[i];
  }
  for (char* c = name; *c; ++c) {
    if (*c < 0x21 || *c > 0x7e) *c = '?';
  }
}

}  // namespace

const char* scenario_name() {
  return name;
}

void finish(ScenarioResult failure) {
  if (!result_printed) {
    result_printed = true;
    if (failure) {
      out << "TESTGUEST FAIL " << name << ": " << failure << "\n";
    } else {
      out << "TESTGUEST PASS " << name << "\n";
    }
  }
  reset_vm();
}

}  // namespace testguest

// Entered by iretq from entry.S: entry = ENTRY_LINUX64 or ENTRY_PVH, boot_struct = the physical
// address of boot_params or hvm_start_info.
extern "C" [[noreturn]] void testguest_main(uint32_t entry, uint64_t boot_struct) {
  using namespace testguest;
  read_boot_info(entry, boot_struct, boot_info);
  read_scenario_name(boot_info.cmdline);
  out << "TESTGUEST START " << name << "\n";
  if (boot_info.problem) finish(boot_info.problem);
  const Scenario* scenario = find_scenario(name);
  finish(scenario ? scenario->run(boot_info) : "unknown scenario");
}
