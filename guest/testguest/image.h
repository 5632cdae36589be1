// Where the guest image (code, data, page tables, stacks) lies, from the linker script.
#pragma once

#include <cstdint>

extern "C" char __image_start[];
extern "C" char __image_end[];  // page-aligned, includes .bss

namespace testguest {

inline uint64_t image_start() {
  return reinterpret_cast<uint64_t>(__image_start);
}
inline uint64_t image_end() {
  return reinterpret_cast<uint64_t>(__image_end);
}

}  // namespace testguest
