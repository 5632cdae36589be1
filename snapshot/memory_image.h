// MemoryImage: guest RAM as a file descriptor holding the regions of a MemoryLayout back to back.
// One type for both homes of an image: the memory file in a snapshot directory (kept on disk,
// restored by any later process) and a sealed memfd (fork: clones in this process tree, no file
// system involved).
#pragma once

#include <cstdint>
#include <string>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "snapshot/memory_layout.h"
#include "vmm/memory/guest_memory.h"

namespace carapace {

struct MemoryImage {
  UniqueFd fd;
  MemoryLayout layout;

  uint64_t size() const { return layout.total_size(); }
  // The fd is a regular file (or memfd) of exactly size() bytes. A shorter file would SIGBUS the
  // VMM on the guest's first touch past its end (docs/security.md #21); a longer one is not an
  // image this code wrote.
  Status check_size() const;
};

// Writes every region of `memory`, in order, into the empty file `fd`. All-zero 4 KiB pages are
// skipped and the file is sized with ftruncate, so they stay holes: a mostly idle guest gives a
// file that occupies only its touched pages on disk (or in tmpfs). Returns the bytes written.
// Does not fsync: the caller decides how durable the file must be.
Result<uint64_t> write_guest_memory(int fd, const GuestMemory& memory);

// Guest RAM copied into a memfd, then sealed against writes, growth and shrinking: the image is
// frozen, so clones mapping it can neither change it nor make it shorter (no SIGBUS).
Result<MemoryImage> memory_image_in_memfd(const GuestMemory& memory, const std::string& name);

// Maps each region MAP_PRIVATE from its offset in the image: clones of one image share its clean
// pages through the page cache and copy only the pages they write; the image never changes.
// The mappings are MADV_DONTFORK like anonymous guest RAM (a forked helper must not inherit
// guest memory) and MAP_NORESERVE (no commit charge for copy-on-write pages never written).
Result<GuestMemory> map_guest_memory_private(const MemoryImage& image);

}  // namespace carapace
