// CPL3 reporting of CPU exceptions. The CPL0 stub (interrupts.S) only redirects the faulting CPL3
// context here, so the report costs no emulated CPL0 instructions.
#include <cstdint>

#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/reset.h"
#include "guest/testguest/scenario.h"

namespace {

const char* const kMnemonics[32] = {"#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM",
                                    "#DF", "CSO", "#TS", "#NP", "#SS", "#GP", "#PF", "?",
                                    "#MF", "#AC", "#MC", "#XM", "#VE", "#CP", "?",   "?",
                                    "?",   "?",   "?",   "?",   "#HV", "#VC", "#SX", "?"};

}  // namespace

extern "C" [[noreturn]] void report_exception(uint64_t vector, uint64_t error, uint64_t rip,
                                              uint64_t cr2) {
  using namespace testguest;
  static bool reporting = false;
  if (reporting) cpl0_triple_fault();  // faulted while reporting a fault: give up
  reporting = true;
  out << "testguest: exception " << dec(vector) << " " << kMnemonics[vector & 31] << " at rip "
      << hex(rip) << " error " << hex(error) << " cr2 " << hex(cr2) << "\n";
  // "unexpected CPU exception #XX" (static: the FAIL line is printed after this returns its text).
  static char reason[] = "unexpected CPU exception #XX";
  const char* mnemonic = kMnemonics[vector & 31];
  char* tail = reason + sizeof("unexpected CPU exception ") - 1;
  int i = 0;
  for (; i < 3 && mnemonic[i]; ++i)
    tail[i] = mnemonic[i];
  tail[i] = '\0';
  finish(reason);
}
