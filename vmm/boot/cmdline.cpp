#include "vmm/boot/cmdline.h"

#include <span>

namespace carapace {

Status Cmdline::append(std::string_view words) {
  if (words.find('\0') != std::string_view::npos)
    return make_error("kernel command line contains a NUL byte");
  while (!words.empty() && words.front() == ' ')
    words.remove_prefix(1);
  while (!words.empty() && words.back() == ' ')
    words.remove_suffix(1);
  if (words.empty()) return {};
  uint64_t added = words.size() + (line_.empty() ? 0 : 1);
  if (line_.size() + added + 1 > capacity_)
    return make_error("kernel command line longer than " + std::to_string(capacity_ - 1) +
                      " bytes");
  if (!line_.empty()) line_ += ' ';
  line_ += words;
  return {};
}

Status Cmdline::write_to(const GuestMemory& mem, GuestAddress addr) const {
  auto bytes =
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(line_.c_str()), line_.size() + 1);
  return mem.write(addr, bytes);
}

}  // namespace carapace
