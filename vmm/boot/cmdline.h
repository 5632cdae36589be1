// The guest kernel command line: built from the user's string plus what the VMM appends (device
// announcements), validated for length and content, and written NUL-terminated into guest RAM.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/base/result.h"
#include "vmm/memory/guest_memory.h"

namespace carapace {

class Cmdline {
 public:
  explicit Cmdline(uint64_t capacity) : capacity_(capacity) {}

  // Appends `words` separated by one space. Refuses NUL bytes and lines that would not fit
  // (capacity counts the terminating NUL).
  Status append(std::string_view words);
  const std::string& str() const { return line_; }
  // Length including the NUL.
  uint64_t size_with_nul() const { return line_.size() + 1; }

  Status write_to(const GuestMemory& mem, GuestAddress addr) const;

 private:
  uint64_t capacity_;
  std::string line_;
};

}  // namespace carapace
