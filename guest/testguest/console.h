// Formatted output to the serial console: `out << "x=" << hex(x) << "\n";`. Output is collected
// per line and written in bursts (see serial.h). Lines end in "\n" only, so the host can compare
// output byte for byte.
#pragma once

#include <cstdint>

namespace testguest {

struct Hex {
  uint64_t value;
};
struct Dec {
  uint64_t value;
  int min_digits;  // zero-padded to this many digits
};

inline Hex hex(uint64_t value) {
  return {value};
}
inline Dec dec(uint64_t value, int min_digits = 1) {
  return {value, min_digits};
}

class Console {
 public:
  const Console& operator<<(const char* text) const;
  const Console& operator<<(char c) const;
  const Console& operator<<(Hex value) const;
  const Console& operator<<(Dec value) const;
};

// Stateless: each translation unit gets its own empty instance; the line buffer is shared.
constexpr Console out;

// Writes out a partial line (the buffer is flushed at every "\n" anyway).
void console_flush();

}  // namespace testguest
