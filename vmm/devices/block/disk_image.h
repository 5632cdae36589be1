// DiskImage: what a virtio-blk device stores its sectors in, with synchronous I/O at byte
// offsets. Two kinds:
//   - RawImage (raw_image.cpp, open_raw_image below): one image file or block device, read-only
//     or writable;
//   - OverlayImage (overlay_image.h): a read-only base shared by many VMs plus this VM's own
//     sparse copy-on-write overlay file.
// The synchronous methods are the fallback backend (and the only one for overlays); io_uring
// targets direct_fd() when an image has one. Offsets and lengths arrive checked against the
// capacity by the request parser (docs/security.md #14); images check them again, so a parser bug
// is an I/O error, never host I/O outside the disk.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "common/base/result.h"

namespace carapace::block {

// virtio-blk always counts in 512-byte sectors, whatever the block size (virtio 1.2 §5.2.4).
inline constexpr uint64_t kSectorSize = 512;
inline constexpr uint32_t kSectorShift = 9;

class DiskImage {
 public:
  virtual ~DiskImage() = default;

  // Whole sectors only: a tail shorter than 512 bytes is not part of the disk.
  uint64_t capacity_sectors() const { return capacity_sectors_; }
  uint64_t capacity_bytes() const { return capacity_sectors_ << kSectorShift; }
  bool read_only() const { return read_only_; }
  // DISCARD and WRITE_ZEROES are offered (punching holes in the image).
  virtual bool supports_discard() const = 0;
  // The fd io_uring may read and write directly, or -1: all I/O goes through the methods below.
  virtual int direct_fd() const = 0;
  // Short description for log lines.
  virtual std::string describe() const = 0;

  // Reads/writes the bytes of `iov` (guest memory) at `offset`; all or nothing as far as the
  // caller is concerned (a short transfer is an error).
  virtual Status read(uint64_t offset, std::span<const iovec> iov) = 0;
  virtual Status write(uint64_t offset, std::span<const iovec> iov) = 0;
  virtual Status flush() = 0;
  // Deallocates [offset, offset + len): later reads return zeroes.
  virtual Status discard(uint64_t offset, uint64_t len) = 0;
  // Makes [offset, offset + len) read as zeroes (punching a hole when it can).
  virtual Status write_zeroes(uint64_t offset, uint64_t len) = 0;

 protected:
  DiskImage(uint64_t capacity_sectors, bool read_only)
      : capacity_sectors_(capacity_sectors), read_only_(read_only) {}

  // Refuses ranges past the capacity or wrapping (the second line of defence).
  Status check_range(uint64_t offset, uint64_t len) const;

 private:
  uint64_t capacity_sectors_;
  bool read_only_;
};

// Opens a raw image (regular file or block device). Read-only images are opened O_RDONLY and
// share-locked; writable ones are opened O_RDWR and locked exclusively, so two VMs never write
// one image. Errors about the path or the file are kInvalidInput.
Result<std::unique_ptr<DiskImage>> open_raw_image(const std::string& path, bool read_only);

// Opens `base` O_RDONLY (share-locked) and `overlay` O_RDWR (created sparse, sized to the base,
// if missing; locked exclusively). See README.md for the design.
Result<std::unique_ptr<DiskImage>> open_overlay_image(const std::string& base,
                                                      const std::string& overlay);

}  // namespace carapace::block
