// The 8259 PIC pair and the 8254 PIT, programmed through port I/O at CPL3.
#pragma once

#include <cstdint>

namespace testguest {

// Remaps the 8259s to VEC_PIC_BASE and masks every line. Interrupts are taken from the IOAPIC;
// an unmasked 8259 would also deliver the PIT through LINT0 (ExtINT), at a vector that collides
// with the CPU exceptions after reset.
void pic_remap_and_mask();

inline constexpr uint32_t kPitHz = 1193182;

// Channel 0, mode 2 (rate generator) at about `hz` interrupts per second. Returns the reload count.
uint16_t pit_start_periodic(uint32_t hz);
// Channel 0 back to mode 0 with the longest count: one last edge ~55 ms later, then silence.
void pit_stop();

}  // namespace testguest
