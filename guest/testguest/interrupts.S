// CPL0 interrupt and exception handlers. Each instruction here is emulated on the target host, so the
// handlers are as short as possible: count and EOI for interrupts; for exceptions, leave CPL0 at once
// and let CPL3 code do the reporting.
#include "guest/testguest/asm_defs.h"

  .section .boot.text, "ax"
  .code64

// One 16-byte stub per exception vector 0..31: push a zero error code where the CPU pushes none,
// push the vector. Vector 13 (#GP) has its own handler, the CPL0 gate, but keeps a stub too so the
// gate can hand unknown #GPs over.
  .balign 16
  .globl exception_stubs
exception_stubs:
  .set vec, 0
  .rept 32
    .if vec == 8 || vec == 10 || vec == 11 || vec == 12 || vec == 13 || vec == 14 || vec == 17 || vec == 21 || vec == 29 || vec == 30
    .else
      push $0
    .endif
    push $vec
    jmp exception_common
    .org exception_stubs + 16 * (vec + 1), 0xcc
    .set vec, vec + 1
  .endr

// Stack: vector, error code, RIP, CS, RFLAGS, RSP, SS. A fault at CPL3 resumes at CPL3 in
// exception_user_entry (report_exception(vector, error, rip, cr2) in exceptions.cpp) with the faulting
// code's stack. A fault at CPL0 means this file is broken; nothing sane is left to do but shut down.
exception_common:
  testb $3, 24(%rsp)
  jz gate_triple_fault
  pop %rdi
  pop %rsi
  mov (%rsp), %rdx
  mov %cr2, %rcx
  movq $exception_user_entry, (%rsp)
  iretq

// #GP: the CPL0 gate. CPL3 code executes `hlt` with a request code in EAX (see cpu.h).
  .globl isr_gp
isr_gp:
  testb $3, 16(%rsp)
  jz 1f
  cmp $GATE_RDMSR, %eax
  je gate_rdmsr
  cmp $GATE_HALT, %eax
  je gate_halt
  cmp $GATE_TRIPLE_FAULT, %eax
  je gate_triple_fault
  cmp $GATE_ENABLE_INTERRUPTS, %eax
  je gate_enable_interrupts
  cmp $GATE_DISABLE_INTERRUPTS, %eax
  je gate_disable_interrupts
1:
  push $13
  jmp exception_common

gate_rdmsr:
  rdmsr
  addq $1, 8(%rsp)                // resume after the 1-byte hlt
  add $8, %rsp                    // drop the error code
  iretq

// Stack: error code, RIP, CS, RFLAGS, RSP, SS. IF takes effect with the iretq.
gate_enable_interrupts:
  orq $0x200, 24(%rsp)
  addq $1, 8(%rsp)
  add $8, %rsp
  iretq

gate_disable_interrupts:
  andq $~0x200, 24(%rsp)
  addq $1, 8(%rsp)
  add $8, %rsp
  iretq

// Interrupts are already off (interrupt gate); an NMI or INIT wakeup just halts again.
gate_halt:
  hlt
  jmp gate_halt

// With a zero-limit IDT any exception escalates #GP -> #DF -> triple fault. The fault is a
// non-canonical load: an instruction every emulator models with a #GP (unlike ud2, say).
  .globl gate_triple_fault
gate_triple_fault:
  lidt null_idt_descriptor(%rip)
  movabs $0x8000000000000000, %rax
  mov (%rax), %rax
  jmp gate_triple_fault

  .globl isr_lapic_timer
isr_lapic_timer:
  incl lapic_timer_ticks(%rip)
  movl $0, LAPIC_EOI_ALIAS
  iretq

  .globl isr_pit
isr_pit:
  incl pit_ticks(%rip)
  movl $0, LAPIC_EOI_ALIAS
  iretq

  .globl isr_pit_pin0
isr_pit_pin0:
  incl pit_pin0_ticks(%rip)
  movl $0, LAPIC_EOI_ALIAS
  iretq

// Spurious LAPIC vector and the (masked) 8259's spurious IRQ 7/15: no EOI is due.
  .globl isr_ignore
isr_ignore:
  iretq

// CPL3 landing pad for exceptions: the faulting code's stack may have any alignment.
  .text
exception_user_entry:
  and $-16, %rsp
  call report_exception
  ud2

  .section .bss
  .balign 4
  .globl lapic_timer_ticks, pit_ticks, pit_pin0_ticks
lapic_timer_ticks:
  .long 0
pit_ticks:
  .long 0
pit_pin0_ticks:
  .long 0
