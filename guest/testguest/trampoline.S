// The AP startup trampoline. The smp scenario copies it to TRAMPOLINE_ADDR and sends each AP a SIPI
// with vector TRAMPOLINE_ADDR >> 12, so it starts in real mode at CS:IP = 0x1000:0. It only loads
// the GDT and enters protected mode; enter_long_mode (entry.S, in the image) does the rest.
// Real-mode addresses are offsets from trampoline_start, which is position-independent.
#include "guest/testguest/asm_defs.h"

  .section .rodata
  .code16
  .globl trampoline_start, trampoline_end
trampoline_start:
  cli
  lgdtl %cs:(trampoline_gdt_descriptor - trampoline_start)
  mov $0x11, %eax                 // CR0.PE | CR0.ET; also clears the CD/NW bits INIT leaves set
  mov %eax, %cr0
  mov $ENTRY_AP, %edi
  ljmpl $KERNEL_CS32, $enter_long_mode

  .balign 8
trampoline_gdt_descriptor:
  .word GDT_SIZE - 1
  .long gdt
trampoline_end:
  .code64
