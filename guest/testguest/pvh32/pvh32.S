// The smallest PVH guest that is an ELF32 (EM_386): its entry writes a marker line to COM1 and
// resets through the i8042, so `carapace run --boot pvh` exits 0 with the marker on the console.
// Only `mov` and `out`: on hosts that emulate every guest CPL0 instruction, anything fancier
// (string I/O, int N) may be slow or unsupported, and the point here is the ELF32 load path.
#include "guest/testguest/pvh_note.inc"

#define COM1 0x3f8
#define I8042_COMMAND 0x64
#define I8042_PULSE_RESET 0xfe

  pvh_entry_note pvh32_entry

.macro putc c
  mov $\c, %al
  out %al, %dx
.endm

// 32-bit protected mode, paging off, flat segments (PVH); no stack is needed.
  .text
  .code32
  .globl pvh32_entry
pvh32_entry:
  mov $COM1, %dx
  putc 'p'
  putc 'v'
  putc 'h'
  putc '3'
  putc '2'
  putc '-'
  putc 'o'
  putc 'k'
  putc '\n'
  mov $I8042_PULSE_RESET, %al
  out %al, $I8042_COMMAND
1:
  jmp 1b
