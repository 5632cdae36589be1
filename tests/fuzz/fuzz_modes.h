// The targets that fuzz several entry points at once ("[mode:1] then ..." in their input
// comments): the first byte picks one of them, which gets the rest of the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>

#include "tests/fuzz/fuzz_memory.h"

namespace carapace::fuzz {

using Mode = std::function<void(Input&)>;

// Runs modes[first byte % modes.size()] on the rest; what LLVMFuzzerTestOneInput returns.
inline int run_one_mode(const uint8_t* data, size_t size, std::initializer_list<Mode> modes) {
  Input in(data, size);
  const size_t pick = in.take<uint8_t>() % modes.size();
  modes.begin()[pick](in);
  return 0;
}

}  // namespace carapace::fuzz
