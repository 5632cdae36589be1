// RawImage: a raw disk image, sector n at byte n * 512 of one file (or block device).
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm/devices/block/disk_file.h"
#include "vmm/devices/block/disk_image.h"

namespace carapace::block {

Status DiskImage::check_range(uint64_t offset, uint64_t len) const {
  const uint64_t cap = capacity_bytes();
  if (offset > cap || len > cap - offset) return make_error("disk range past the capacity");
  return {};
}

namespace {

class RawImage : public DiskImage {
 public:
  RawImage(DiskFile file, bool read_only, bool block_device, std::string path)
      : DiskImage(file.size >> kSectorShift, read_only),
        fd_(std::move(file.fd)),
        block_device_(block_device),
        path_(std::move(path)) {}

  // Punching holes needs a regular file; a read-only disk takes no writes at all.
  bool supports_discard() const override { return !read_only() && !block_device_; }
  int direct_fd() const override { return fd_.get(); }
  std::string describe() const override {
    return path_ + (read_only() ? " (read-only)" : " (read-write)");
  }

  Status read(uint64_t offset, std::span<const iovec> iov) override {
    TRY_STATUS(check_range(offset, iov_bytes(iov)));
    return preadv_all(fd_.get(), offset, iov);
  }
  Status write(uint64_t offset, std::span<const iovec> iov) override {
    if (read_only()) return make_error("write to a read-only disk");
    TRY_STATUS(check_range(offset, iov_bytes(iov)));
    return pwritev_all(fd_.get(), offset, iov);
  }
  Status flush() override {
    if (read_only()) return {};
    if (::fdatasync(fd_.get()) < 0) return sys_error("fdatasync");
    return {};
  }
  Status discard(uint64_t offset, uint64_t len) override {
    if (!supports_discard()) return make_error("discard not supported");
    TRY_STATUS(check_range(offset, len));
    if (len == 0) return {};
    // virtio 1.2 §5.2.6.2: discarded sectors may read back as anything; a hole reads zeroes.
    // A file system that cannot punch holes simply keeps the data (discard is a hint).
    if (::fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                    static_cast<off_t>(offset), static_cast<off_t>(len)) < 0 &&
        errno != EOPNOTSUPP)
      return sys_error("fallocate(PUNCH_HOLE)");
    return {};
  }
  Status write_zeroes(uint64_t offset, uint64_t len) override {
    if (!supports_discard()) return make_error("write zeroes not supported");
    TRY_STATUS(check_range(offset, len));
    if (len == 0) return {};
    return zero_file_range(fd_.get(), offset, len);
  }

 private:
  UniqueFd fd_;
  bool block_device_;
  std::string path_;
};

}  // namespace

Result<std::unique_ptr<DiskImage>> open_raw_image(const std::string& path, bool read_only) {
  DiskFile f = TRY(
      open_disk_file("--drive path", path, read_only ? FileMode::kReadOnly : FileMode::kReadWrite));
  struct stat st;
  const bool block_device = ::fstat(f.fd.get(), &st) == 0 && S_ISBLK(st.st_mode);
  if (f.size < kSectorSize)
    return as_invalid_input(make_error("--drive path " + path + ": smaller than one sector"));
  return std::unique_ptr<DiskImage>(new RawImage(std::move(f), read_only, block_device, path));
}

}  // namespace carapace::block
