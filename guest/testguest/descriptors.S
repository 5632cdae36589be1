// The guest's GDT, the BSP's TSS, the IDT, the first iretq frame and the stacks: all static, so the
// CPL0 boot path only has to load them (see entry.S for why).
#include "guest/testguest/asm_defs.h"

// A 64-bit interrupt gate (IF cleared on entry, DPL 0: `int N` from CPL3 would raise #GP, and this
// guest never uses `int N`). The handler must lie in .boot, see asm_defs.h.
.macro gate handler
  .word (\handler) - IMAGE_BASE
  .word KERNEL_CS
  .byte 0
  .byte 0x8e
  .word IMAGE_BASE_BITS_16_23
  .long 0
  .long 0
.endm

  .section .boot.data, "aw"
  .balign 16
  .globl gdt
gdt:
  .quad 0
  .quad 0x00cf9b000000ffff        // 0x08 KERNEL_CS32: 32-bit code, flat (accessed bit preset,
  .quad 0x00af9b000000ffff        // 0x10 KERNEL_CS: 64-bit code       so the CPU never writes it)
  .quad 0x00cf93000000ffff        // 0x18 KERNEL_DS
  .quad 0x00cff3000000ffff        // 0x20 USER_DS: data, DPL 3
  .quad 0x00affb000000ffff        // 0x28 USER_CS: 64-bit code, DPL 3
  // TSS_SEL0: the BSP's TSS, an available 64-bit TSS (type 9), DPL 0.
  .word bsp_tss_end - bsp_tss - 1
  .word bsp_tss - IMAGE_BASE
  .byte IMAGE_BASE_BITS_16_23
  .byte 0x89
  .byte 0, 0
  .long 0, 0
  // The APs' TSS descriptors: the smp scenario writes them at CPL3 before starting the APs (each
  // CPU needs its own TSS: ltr marks a TSS busy, and each CPU needs its own RSP0).
  .fill 16 * (MAX_CPUS - 1), 1, 0
gdt_end:
  .if gdt_end - gdt - GDT_SIZE
  .error "GDT size does not match GDT_SIZE"
  .endif

  .balign 8
  .globl gdt_descriptor
gdt_descriptor:
  .word GDT_SIZE - 1
  .quad gdt

  .balign 16
bsp_tss:
  .long 0
  .quad bsp_kstack + BSP_KSTACK_SIZE  // RSP0: where interrupts and the #GP gate run
  .fill 11, 8, 0                  // RSP1, RSP2, reserved, IST1-7, reserved
  .word 0
  .word TSS_SIZE                  // the I/O permission bitmap follows (see USER_RFLAGS)
  .fill 0x508 / 8, 1, 0           // ports 0..0x507 allowed at CPL3 whatever the IOPL (0x505:
                                  // the pvpanic port of the panic scenario)
  .byte 0xff                      // terminator: the CPU reads two bytes per check
bsp_tss_end:

  .balign 16
idt:
  .set vec, 0
  .rept 256
    .if vec == 13
      gate isr_gp
    .elseif vec < 32
      gate exception_stubs+16*vec
    .elseif vec == VEC_LAPIC_TIMER
      gate isr_lapic_timer
    .elseif vec == VEC_PIT
      gate isr_pit
    .elseif vec == VEC_PIT_PIN0
      gate isr_pit_pin0
    .elseif (vec >= VEC_PIC_BASE && vec < VEC_PIC_BASE + 16) || vec == VEC_SPURIOUS
      gate isr_ignore
    .else
      .quad 0, 0                  // not present: delivery raises #NP, reported like any exception
    .endif
    .set vec, vec + 1
  .endr
idt_end:

  .balign 8
  .globl idt_descriptor
idt_descriptor:
  .word idt_end - idt - 1
  .quad idt

// A zero-limit IDT: once loaded, the next exception cannot be delivered and becomes a triple fault.
  .globl null_idt_descriptor
null_idt_descriptor:
  .word 0
  .quad 0

// The BSP's first trip to CPL3: testguest_main(EDI, RSI) with RSP + 8 16-byte aligned, as after a
// call instruction.
  .balign 8
  .globl bsp_iret_frame
bsp_iret_frame:
  .quad testguest_main
  .quad USER_CS
  .quad USER_RFLAGS
  .quad bsp_ustack + BSP_USTACK_SIZE - 8
  .quad USER_DS

  .section .bss
  .balign 16
bsp_kstack:
  .skip BSP_KSTACK_SIZE
bsp_ustack:
  .skip BSP_USTACK_SIZE
  .globl ap_kstacks
ap_kstacks:
  .skip AP_KSTACK_SIZE * MAX_CPUS
  .globl ap_ustacks
ap_ustacks:
  .skip AP_USTACK_SIZE * MAX_CPUS
