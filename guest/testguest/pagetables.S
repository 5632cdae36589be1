// Static page tables: an identity map of the first 4 GiB with 2 MiB pages, built by the assembler
// so the CPL0 boot path only loads CR3. Every entry is user-accessible and writable: all guest code
// runs at CPL3, and the memory scenario links page directories for RAM above 4 GiB into the PDPT
// from CPL3. Accessed/dirty bits are preset so no page walk ever writes a table.
#define PTE_P 0x1
#define PTE_RW 0x2
#define PTE_US 0x4
#define PTE_PWT 0x8
#define PTE_PCD 0x10
#define PTE_A 0x20
#define PTE_D 0x40
#define PTE_PS 0x80
#define TABLE (PTE_P | PTE_RW | PTE_US | PTE_A)
#define PAGE_2M (PTE_P | PTE_RW | PTE_US | PTE_A | PTE_D | PTE_PS)
// From 0xfe000000 up (IOAPIC, LAPIC, and the rest of the chipset range): uncached.
#define UNCACHED_FROM 0xfe000000

  .section .data.pagetables, "aw"
  .balign 4096
  .globl pml4
pml4:
  .quad pdpt + TABLE
  .fill 510, 8, 0
  // Entry 511 aliases entry 0, and PDPT entry 511 maps the 3..4 GiB directory again, so
  // 0xfee000b0 also appears at 0xfffffffffee000b0 (LAPIC_EOI_ALIAS, see asm_defs.h).
  .quad pdpt + TABLE

  .balign 4096
  .globl pdpt
pdpt:
  .quad pd + TABLE
  .quad pd + 0x1000 + TABLE
  .quad pd + 0x2000 + TABLE
  .quad pd + 0x3000 + TABLE
  .fill 507, 8, 0                 // 4..510: RAM above 4 GiB, linked in at CPL3 when needed
  .quad pd + 0x3000 + TABLE

  .balign 4096
pd:
  .set addr, 0
  .rept 4 * 512
    .if addr >= UNCACHED_FROM
      .quad addr + PAGE_2M + PTE_PCD + PTE_PWT
    .else
      .quad addr + PAGE_2M
    .endif
    .set addr, addr + 0x200000
  .endr
