// Entry paths. The Linux 64-bit boot protocol (ELF e_entry), PVH (Xen ELF note, 32-bit protected
// mode) and the APs' real-mode trampoline all end in long_mode, which loads the guest's own
// descriptor tables and iretq's to CPL3. On the host this guest is built for, every CPL0 instruction
// is emulated (~1.3 us each) while CPL3 runs natively, so these paths are short straight-line code:
// the page tables, GDT, TSS, IDT and the first iretq frame are all prebuilt in the image.
#include "guest/testguest/asm_defs.h"
#include "guest/testguest/pvh_note.inc"

#define MSR_EFER 0xc0000080
#define EFER_LME 0x100
#define CR4_PAE 0x20
#define CR0_PE 0x1
#define CR0_MP 0x2
#define CR0_ET 0x10
#define CR0_NE 0x20
#define CR0_PG 0x80000000

  pvh_entry_note pvh_entry

  .section .boot.text, "ax"

// PVH entry: 32-bit protected mode, paging off, flat segments, EBX = struct hvm_start_info.
  .code32
  .globl pvh_entry
pvh_entry:
  lgdt gdt_descriptor             // reads the 32-bit base; the upper half is zero anyway
  mov %ebx, %esi
  mov $ENTRY_PVH, %edi
// Shared with the AP trampoline, which arrives here with our GDT loaded and EDI = ENTRY_AP. No data
// segment access from here on: an AP's DS still has its real-mode 64 KiB limit.
  .globl enter_long_mode
enter_long_mode:
  mov $CR4_PAE, %eax
  mov %eax, %cr4
  mov $pml4, %eax
  mov %eax, %cr3
  mov $MSR_EFER, %ecx
  mov $EFER_LME, %eax
  xor %edx, %edx
  wrmsr
  mov $(CR0_PG | CR0_NE | CR0_ET | CR0_MP | CR0_PE), %eax
  mov %eax, %cr0
  ljmp $KERNEL_CS, $long_mode

// Linux 64-bit boot protocol entry (ELF e_entry): long mode, CPL0, the loader's identity map of the
// first GiB, RSI = struct boot_params. CR4 is rewritten so no SMEP/SMAP is left on: every page of
// this guest is user-accessible, including the CPL0 code and descriptor tables.
  .code64
  .globl linux64_entry
linux64_entry:
  mov $ENTRY_LINUX64, %edi
  mov $CR4_PAE, %eax
  mov %rax, %cr4
  mov $pml4, %eax
  mov %rax, %cr3
  lgdt gdt_descriptor(%rip)
long_mode:
  lidt idt_descriptor(%rip)
  cmp $ENTRY_AP, %edi
  je ap_long_mode
  mov $TSS_SEL0, %eax
  ltr %ax
  // testguest_main(EDI = entry path, RSI = boot structure) at CPL3 on the BSP user stack.
  lea bsp_iret_frame(%rip), %rsp
  iretq

// An AP takes the next CPU slot, loads that slot's TSS and iretq's to ap_main(slot) at CPL3 through
// the frame the BSP left at the top of the slot's kernel stack (see scenarios/smp.cpp).
ap_long_mode:
  mov $1, %eax
  lock xadd %eax, ap_next_slot(%rip)
  mov %eax, %edi
  shl $4, %eax
  add $TSS_SEL0, %eax
  ltr %ax
  imul $AP_KSTACK_SIZE, %edi, %eax
  lea (ap_kstacks + AP_KSTACK_SIZE - 40)(%rax), %rsp
  iretq

  .section .data
  .balign 4
  .globl ap_next_slot
ap_next_slot:
  .long 1                         // slot 0 is the BSP
