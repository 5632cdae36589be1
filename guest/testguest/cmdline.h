// Kernel command line parsing: whitespace-separated words, `key=value` parameters.
#pragma once

#include <cstddef>
#include <cstdint>

namespace testguest {

// Longest command line looked at; the VMM reserves 64 KiB for it.
inline constexpr size_t kCmdlineMax = 0x10000;

// Finds the first word starting with `key` (e.g. "testguest.run=") and copies the rest of that word
// into `value` (NUL-terminated, truncated to value_size - 1). Returns false if there is no such
// word.
bool cmdline_value(const char* cmdline, const char* key, char* value, size_t value_size);

// True if `word` appears as a whole whitespace-separated word.
bool cmdline_has_word(const char* cmdline, const char* word);

// The decimal number after `key` (its leading digits, up to 23 of them), or `fallback` when the
// key is absent or its value does not start with a digit.
uint64_t cmdline_u64(const char* cmdline, const char* key, uint64_t fallback);

}  // namespace testguest
