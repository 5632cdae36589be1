// BlockBitmap: one bit per overlay block, "this block's current data lives in the overlay".
// Fixed size, chosen at open; indices past the end read false and are never set.
#pragma once

#include <cstdint>
#include <vector>

namespace carapace::block {

class BlockBitmap {
 public:
  BlockBitmap() = default;
  explicit BlockBitmap(uint64_t blocks) : blocks_(blocks), words_((blocks + 63) / 64) {}

  uint64_t size() const { return blocks_; }
  bool test(uint64_t i) const { return i < blocks_ && (words_[i / 64] >> (i % 64)) & 1; }
  // Sets bits [first, last], clamped to the bitmap.
  void set_range(uint64_t first, uint64_t last) {
    if (blocks_ == 0 || first >= blocks_) return;
    if (last >= blocks_) last = blocks_ - 1;
    for (uint64_t i = first; i <= last; ++i)
      words_[i / 64] |= uint64_t{1} << (i % 64);
  }
  uint64_t count() const {
    uint64_t n = 0;
    for (uint64_t w : words_)
      n += static_cast<uint64_t>(__builtin_popcountll(w));
    return n;
  }

 private:
  uint64_t blocks_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace carapace::block
