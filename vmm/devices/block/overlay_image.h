// OverlayImage: copy-on-write over a shared read-only base (see README.md, "Overlay").
//
// The overlay is a sparse file as long as the base. A bitmap with one bit per overlay block says
// where each block's data lives: set, in the overlay; clear, still in the base. The bitmap is not
// stored anywhere: the overlay's allocated extents are the bitmap, found again at open with
// SEEK_DATA/SEEK_HOLE. That holds because the overlay only ever receives whole blocks the first
// time (a partial write to a block not yet copied reads the rest from the base first), and a
// block is exactly one file-system block or more, so a block is allocated in the overlay iff it
// was copied up.
//
// Synchronous only (no io_uring): reads split at presence boundaries and writes that need a
// read-modify-write would need dependent asynchronous steps; the sync path keeps them simple.
// Discard and write-zeroes are not offered: punching a hole would expose the base again.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/base/unique_fd.h"
#include "vmm/devices/block/block_bitmap.h"
#include "vmm/devices/block/disk_image.h"

namespace carapace::block {

class OverlayImage : public DiskImage {
 public:
  // Smallest block: 4 KiB (the guest's page size, so page-cache writeback never needs a
  // read-modify-write). Larger when the overlay's file system allocates in larger blocks.
  static constexpr uint64_t kMinBlock = 4096;
  static constexpr uint64_t kMaxBlock = 1 << 20;

  static Result<std::unique_ptr<OverlayImage>> open(const std::string& base,
                                                    const std::string& overlay);

  bool supports_discard() const override { return false; }
  int direct_fd() const override { return -1; }
  std::string describe() const override;

  Status read(uint64_t offset, std::span<const iovec> iov) override;
  Status write(uint64_t offset, std::span<const iovec> iov) override;
  Status flush() override;
  Status discard(uint64_t, uint64_t) override;
  Status write_zeroes(uint64_t, uint64_t) override;

  uint64_t block_size() const { return block_; }
  uint64_t present_blocks() const { return present_.count(); }
  bool block_present(uint64_t block) const { return present_.test(block); }

 private:
  OverlayImage(UniqueFd base, UniqueFd overlay, uint64_t size, uint64_t block, std::string paths)
      : DiskImage(size >> kSectorShift, /*read_only=*/false),
        base_(std::move(base)),
        overlay_(std::move(overlay)),
        size_(size),
        block_(block),
        present_((size + block - 1) / block),
        paths_(std::move(paths)) {}

  Status load_bitmap();
  uint64_t block_of(uint64_t offset) const { return offset / block_; }
  uint64_t block_end(uint64_t block) const;
  // Copies the block up: base bytes, with [offset, offset + len) taken from iov[from..].
  Status copy_up(uint64_t block, uint64_t offset, uint64_t len, std::span<const iovec> iov,
                 uint64_t from);

  UniqueFd base_, overlay_;
  uint64_t size_;   // bytes, of the base and the overlay
  uint64_t block_;  // power of two
  BlockBitmap present_;
  std::string paths_;
  std::vector<uint8_t> bounce_;  // one block, for copy-up
  std::vector<iovec> scratch_;
};

}  // namespace carapace::block
