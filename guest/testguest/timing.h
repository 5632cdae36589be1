// TSC rate, measured against the 8254 PIT (whose count KVM derives from host time), for the
// benchmark scenarios that report rates and latencies in real units.
#pragma once

#include <cstdint>

namespace testguest {

// Counts TSC cycles over ~30 ms of PIT channel 0 (about 20 port-I/O exits each side). Leaves the
// PIT stopped. Returns 0 if the PIT does not count.
uint64_t calibrate_tsc_hz();

// Nanoseconds for `cycles` at `tsc_hz`.
inline uint64_t cycles_to_ns(uint64_t cycles, uint64_t tsc_hz) {
  // No 128-bit division in this freestanding image: split into whole seconds and the rest.
  return cycles / tsc_hz * 1000000000u + cycles % tsc_hz * 1000000000u / tsc_hz;
}

}  // namespace testguest
