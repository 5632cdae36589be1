#include "guest/testguest/console.h"

#include <cstddef>

#include "guest/testguest/serial.h"

namespace testguest {
namespace {

// One line buffer: only the BSP prints (APs never do, short of an exception report).
char line[128];
size_t line_length = 0;

void put(char c) {
  line[line_length++] = c;
  if (c == '\n' || line_length == sizeof(line)) console_flush();
}

}  // namespace

void console_flush() {
  serial_write(line, line_length);
  line_length = 0;
}

const Console& Console::operator<<(const char* text) const {
  while (*text)
    put(*text++);
  return *this;
}

const Console& Console::operator<<(char c) const {
  put(c);
  return *this;
}

const Console& Console::operator<<(Hex value) const {
  char digits[16];
  int n = 0;
  do {
    digits[n++] = "0123456789abcdef"[value.value & 0xf];
    value.value >>= 4;
  } while (value.value);
  put('0');
  put('x');
  while (n)
    put(digits[--n]);
  return *this;
}

const Console& Console::operator<<(Dec value) const {
  char digits[20];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value.value % 10);
    value.value /= 10;
  } while (value.value || (n < value.min_digits && n < 20));
  while (n)
    put(digits[--n]);
  return *this;
}

}  // namespace testguest
