// GuestAddress: a guest-physical address, a distinct type so it is never confused with a host
// pointer or a length.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>

namespace carapace {

struct GuestAddress {
  uint64_t value = 0;

  constexpr GuestAddress() = default;
  constexpr explicit GuestAddress(uint64_t v) : value(v) {}

  // addr + offset, or nullopt if it wraps past 2^64.
  constexpr std::optional<GuestAddress> checked_add(uint64_t offset) const {
    uint64_t out;
    if (__builtin_add_overflow(value, offset, &out)) return std::nullopt;
    return GuestAddress(out);
  }
  // Only for offsets the caller has already bounded.
  constexpr GuestAddress unchecked_add(uint64_t offset) const {
    return GuestAddress(value + offset);
  }

  constexpr auto operator<=>(const GuestAddress&) const = default;
};

}  // namespace carapace
