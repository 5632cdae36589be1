// Constants shared by the assembly entry code and the C++ side of the test guest. Plain #defines so
// the .S files (run through the C preprocessor) can use them too.
#ifndef GUEST_TESTGUEST_ASM_DEFS_H_
#define GUEST_TESTGUEST_ASM_DEFS_H_

// The image is linked at 2 MiB. Everything the IDT and the static GDT point at (interrupt stubs,
// the BSP's TSS) lies in the .boot output section, inside the first 64 KiB of the image, so the
// linker can fill a gate's split address fields: bits 0..15 = symbol - IMAGE_BASE (an R_X86_64_16
// that fits), bits 16..23 = IMAGE_BASE >> 16, higher bits zero. The linker script asserts the 64
// KiB.
#define IMAGE_BASE 0x200000
#define IMAGE_BASE_BITS_16_23 0x20

// GDT selectors.
#define KERNEL_CS32 0x08  // flat 32-bit code: the PVH entry and the AP trampoline's 32-bit step
#define KERNEL_CS 0x10    // 64-bit code, the selector the Linux boot protocol uses too
#define KERNEL_DS 0x18
#define USER_DS 0x23  // GDT entry 4, RPL 3
#define USER_CS 0x2b  // GDT entry 5, RPL 3
#define TSS_SEL0 \
  0x30  // 16-byte TSS descriptor of CPU slot 0 (the BSP); slot n at TSS_SEL0 + 16 * n
#define MAX_CPUS 64
#define GDT_SIZE (TSS_SEL0 + 16 * MAX_CPUS)
#define TSS_SIZE 104

// How the guest was entered (EDI when CPL0 code hands over to CPL3).
#define ENTRY_LINUX64 1
#define ENTRY_PVH 2
#define ENTRY_AP 3

// RFLAGS for CPL3: IOPL 3, reserved bit 1, IF clear. IOPL 3 lets CPL3 code use in/out (and cli/sti)
// on hardware virtualization; a host that runs guest CPL3 in its own ring 3 (PVM) silently drops
// it, so the BSP's TSS also carries an I/O permission bitmap allowing ports 0..0x507, and
// interrupts are switched on and off through the CPL0 gate rather than with sti/cli.
#define USER_RFLAGS 0x3002

// Interrupt vectors.
#define VEC_PIC_BASE 0x20  // the legacy 8259 pair is remapped here, then masked
#define VEC_LAPIC_TIMER 0x40
#define VEC_PIT 0x41       // the IOAPIC pin the MP table names for ISA IRQ 0
#define VEC_PIT_PIN0 0x42  // IOAPIC pin 0: catches IRQ 0 routed to a pin the MP table doesn't name
#define VEC_SPURIOUS 0xff  // LAPIC spurious-interrupt vector

// The CPL0 gate: CPL3 code executes `hlt` (which raises #GP at CPL3) with a request code in EAX.
#define GATE_RDMSR 0x6a7e0001               // ECX = MSR index; returns EDX:EAX
#define GATE_HALT 0x6a7e0002                // park this CPU: hlt forever with interrupts off
#define GATE_TRIPLE_FAULT 0x6a7e0003        // load an empty IDT and fault: the VM shuts down
#define GATE_ENABLE_INTERRUPTS 0x6a7e0004   // return with RFLAGS.IF set
#define GATE_DISABLE_INTERRUPTS 0x6a7e0005  // return with RFLAGS.IF clear

// The LAPIC EOI register (0xfee000b0) seen through the page-table alias of the 3..4 GiB range at
// -4 GiB: an address that fits a sign-extended disp32, so a CPL0 interrupt handler can write EOI
// with one instruction and no scratch register.
#define LAPIC_EOI_ALIAS 0xfffffffffee000b0

// Stacks. Kernel stacks only ever hold an interrupt frame and a few pushes.
#define BSP_KSTACK_SIZE 4096
#define BSP_USTACK_SIZE 16384
#define AP_KSTACK_SIZE 512
#define AP_USTACK_SIZE 2048

// Physical page the AP real-mode trampoline is copied to (SIPI vector 0x10).
#define TRAMPOLINE_ADDR 0x10000

#endif  // GUEST_TESTGUEST_ASM_DEFS_H_
