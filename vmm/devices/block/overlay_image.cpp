#include "vmm/devices/block/overlay_image.h"

#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "vmm/devices/block/disk_file.h"

namespace carapace::block {

namespace {

Error bad_overlay(const std::string& path, const std::string& why, int err = 0) {
  std::string msg = "--drive overlay " + path + ": " + why;
  return as_invalid_input(err ? sys_error(std::move(msg), err) : make_error(std::move(msg)));
}

}  // namespace

Result<std::unique_ptr<OverlayImage>> OverlayImage::open(const std::string& base_path,
                                                         const std::string& overlay_path) {
  DiskFile base = TRY(open_disk_file("--drive path", base_path, FileMode::kReadOnly));
  if (base.size < kSectorSize)
    return as_invalid_input(make_error("--drive path " + base_path + ": smaller than one sector"));
  struct stat base_st;
  if (::fstat(base.fd.get(), &base_st) < 0) return sys_error("fstat " + base_path);
  // The exclusive lock below would refuse the same inode anyway; this says why.
  struct stat ov_st;
  if (::stat(overlay_path.c_str(), &ov_st) == 0 && ov_st.st_dev == base_st.st_dev &&
      ov_st.st_ino == base_st.st_ino)
    return bad_overlay(overlay_path, "is the base image itself");

  DiskFile ov = TRY(open_disk_file("--drive overlay", overlay_path, FileMode::kReadWriteCreate));
  if (::fstat(ov.fd.get(), &ov_st) < 0) return sys_error("fstat " + overlay_path);
  if (!S_ISREG(ov_st.st_mode)) return bad_overlay(overlay_path, "not a regular file");
  if (ov.created || ov.size == 0) {
    // Sparse: no block is allocated until the guest writes it.
    if (::ftruncate(ov.fd.get(), static_cast<off_t>(base.size)) < 0)
      return sys_error("ftruncate " + overlay_path);
    // A file system without holes reports the whole file as data: every block would look
    // copied up and read as zeroes. Refuse it rather than lose the base's contents.
    if (::lseek(ov.fd.get(), 0, SEEK_DATA) >= 0 || errno != ENXIO)
      return bad_overlay(overlay_path, "its file system does not report holes (SEEK_DATA)");
  } else if (ov.size != base.size) {
    return bad_overlay(overlay_path, "is " + std::to_string(ov.size) + " bytes, the base is " +
                                         std::to_string(base.size));
  }

  struct statfs fs;
  if (::fstatfs(ov.fd.get(), &fs) < 0) return sys_error("fstatfs " + overlay_path);
  uint64_t block = std::max<uint64_t>(kMinBlock, static_cast<uint64_t>(fs.f_bsize));
  if ((block & (block - 1)) != 0 || block > kMaxBlock)
    return bad_overlay(overlay_path,
                       "file-system block size " + std::to_string(fs.f_bsize) + " not supported");

  std::unique_ptr<OverlayImage> img(new OverlayImage(std::move(base.fd), std::move(ov.fd),
                                                     base.size, block,
                                                     base_path + " + overlay " + overlay_path));
  TRY_STATUS(img->load_bitmap());
  img->bounce_.resize(block);
  return img;
}

Status OverlayImage::load_bitmap() {
  // Every allocated extent of the overlay is a run of copied-up blocks. Rounding outward is
  // exact: extents start and end on block boundaries because blocks are written whole.
  off_t pos = 0;
  while (static_cast<uint64_t>(pos) < size_) {
    const off_t data = ::lseek(overlay_.get(), pos, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;  // no data past pos
      return sys_error("lseek(SEEK_DATA) on the overlay");
    }
    const off_t hole = ::lseek(overlay_.get(), data, SEEK_HOLE);
    if (hole < 0) return sys_error("lseek(SEEK_HOLE) on the overlay");
    if (hole <= data) break;
    present_.set_range(block_of(static_cast<uint64_t>(data)),
                       block_of(static_cast<uint64_t>(hole) - 1));
    pos = hole;
  }
  return {};
}

std::string OverlayImage::describe() const {
  return paths_ + " (copy-on-write, " + std::to_string(block_ / 1024) + " KiB blocks, " +
         std::to_string(present_.count()) + " copied up)";
}

uint64_t OverlayImage::block_end(uint64_t block) const {
  return std::min(size_, (block + 1) * block_);
}

Status OverlayImage::read(uint64_t offset, std::span<const iovec> iov) {
  const uint64_t len = iov_bytes(iov);
  TRY_STATUS(check_range(offset, len));
  const uint64_t end = offset + len;
  uint64_t pos = offset;
  while (pos < end) {
    // One run of blocks whose data lives in the same file.
    uint64_t blk = block_of(pos);
    const bool in_overlay = present_.test(blk);
    uint64_t run_end = std::min(end, block_end(blk));
    while (run_end < end && present_.test(++blk) == in_overlay)
      run_end = std::min(end, block_end(blk));
    scratch_.clear();
    iov_slice(iov, pos - offset, run_end - pos, scratch_);
    TRY_STATUS(preadv_all(in_overlay ? overlay_.get() : base_.get(), pos, scratch_));
    pos = run_end;
  }
  return {};
}

Status OverlayImage::write(uint64_t offset, std::span<const iovec> iov) {
  const uint64_t len = iov_bytes(iov);
  TRY_STATUS(check_range(offset, len));
  const uint64_t end = offset + len;
  uint64_t pos = offset;
  // A block can be written in place when it is already in the overlay or the write covers it
  // whole; otherwise it is copied up first.
  auto direct = [&](uint64_t blk, uint64_t from) {
    return present_.test(blk) ||
           (from == blk * block_ && std::min(end, block_end(blk)) == block_end(blk));
  };
  while (pos < end) {
    const uint64_t first = block_of(pos);
    if (!direct(first, pos)) {
      const uint64_t stop = std::min(end, block_end(first));
      TRY_STATUS(copy_up(first, pos, stop - pos, iov, pos - offset));
      present_.set_range(first, first);
      pos = stop;
      continue;
    }
    uint64_t run_end = std::min(end, block_end(first));
    uint64_t last = first;
    while (run_end < end && direct(last + 1, run_end)) {
      ++last;
      run_end = std::min(end, block_end(last));
    }
    scratch_.clear();
    iov_slice(iov, pos - offset, run_end - pos, scratch_);
    TRY_STATUS(pwritev_all(overlay_.get(), pos, scratch_));
    present_.set_range(first, last);  // only once the data is in the overlay
    pos = run_end;
  }
  return {};
}

Status OverlayImage::copy_up(uint64_t block, uint64_t offset, uint64_t len,
                             std::span<const iovec> iov, uint64_t from) {
  const uint64_t start = block * block_;
  const uint64_t blen = block_end(block) - start;
  iovec whole{bounce_.data(), static_cast<size_t>(blen)};
  TRY_STATUS(preadv_all(base_.get(), start, {&whole, 1}));
  scratch_.clear();
  iov_slice(iov, from, len, scratch_);
  uint8_t* dst = bounce_.data() + (offset - start);
  for (const iovec& v : scratch_) {
    std::memcpy(dst, v.iov_base, v.iov_len);
    dst += v.iov_len;
  }
  return pwritev_all(overlay_.get(), start, {&whole, 1});
}

Status OverlayImage::flush() {
  // fdatasync also persists the allocation metadata, i.e. the bitmap (see the header).
  if (::fdatasync(overlay_.get()) < 0) return sys_error("fdatasync overlay");
  return {};
}

Status OverlayImage::discard(uint64_t, uint64_t) {
  return make_error("discard is not offered on a copy-on-write overlay");
}

Status OverlayImage::write_zeroes(uint64_t, uint64_t) {
  return make_error("write zeroes is not offered on a copy-on-write overlay");
}

Result<std::unique_ptr<DiskImage>> open_overlay_image(const std::string& base,
                                                      const std::string& overlay) {
  return std::unique_ptr<DiskImage>(TRY(OverlayImage::open(base, overlay)));
}

}  // namespace carapace::block
