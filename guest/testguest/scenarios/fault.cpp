// fault: shuts the VM down with a triple fault. The VMM must report it and exit non-zero; this
// scenario never prints PASS.
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenario.h"

namespace testguest {

ScenarioResult run_fault(const BootInfo&) {
  out << "testguest: triple-faulting now\n";
  cpl0_triple_fault();
}

}  // namespace testguest
