#include "snapshot/memory_image.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "snapshot/file_io.h"

namespace carapace {

namespace {

constexpr uint64_t kPage = 4096;

bool page_is_zero(const uint8_t* p) {
  // Word loads the compiler vectorises; stop at the first non-zero cache line so a dirty page
  // costs little more than its first bytes.
  for (uint64_t line = 0; line < kPage; line += 64) {
    uint64_t acc = 0;
    for (uint64_t i = 0; i < 64; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + line + i, 8);
      acc |= w;
    }
    if (acc != 0) return false;
  }
  return true;
}

// Which pages of an anonymous mapping were ever faulted in, from /proc/self/pagemap (bit 63:
// present, bit 62: swapped). A page that is neither reads as zero, so it need not even be read:
// a mostly idle 2 GiB guest is copied in the time its touched pages take, not all of its RAM.
// Empty when pagemap cannot be read; the caller then checks every page.
std::vector<bool> populated_pages(const uint8_t* base, uint64_t size) {
  std::vector<bool> out;
  UniqueFd pm(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  if (!pm.valid()) return out;
  const uint64_t pages = size / kPage;
  out.resize(pages);
  std::vector<uint64_t> entries(4096);
  const uint64_t first = reinterpret_cast<uintptr_t>(base) / kPage;
  for (uint64_t i = 0; i < pages; i += entries.size()) {
    const uint64_t n = std::min<uint64_t>(entries.size(), pages - i);
    const ssize_t want = static_cast<ssize_t>(n * sizeof(uint64_t));
    if (::pread(pm.get(), entries.data(), static_cast<size_t>(want),
                static_cast<off_t>((first + i) * sizeof(uint64_t))) != want)
      return {};
    for (uint64_t k = 0; k < n; ++k)
      out[i + k] = (entries[k] >> 62) != 0;
  }
  return out;
}

// Writes the runs of non-zero pages of one region at `file_offset`. `populated`, when not empty,
// says which pages can hold data at all.
Result<uint64_t> write_region(int fd, const uint8_t* base, uint64_t size, uint64_t file_offset,
                              const std::vector<bool>& populated) {
  auto skip = [&](uint64_t page) {
    return (!populated.empty() && !populated[page / kPage]) || page_is_zero(base + page);
  };
  uint64_t written = 0;
  uint64_t page = 0;
  while (page < size) {
    if (skip(page)) {
      page += kPage;
      continue;
    }
    uint64_t run_end = page + kPage;
    while (run_end < size && !skip(run_end))
      run_end += kPage;
    TRY_STATUS(
        pwrite_all(fd, {base + page, run_end - page}, file_offset + page, "write memory image"));
    written += run_end - page;
    page = run_end;
  }
  return written;
}

}  // namespace

Status MemoryImage::check_size() const {
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return sys_error("stat memory image");
  if (!S_ISREG(st.st_mode)) return as_invalid_input(make_error("memory image is not a file"));
  uint64_t have = static_cast<uint64_t>(st.st_size);
  if (have != size())
    return as_invalid_input(make_error(
        "memory image is " + std::to_string(have) + " bytes, the snapshot's RAM is " +
        std::to_string(size()) + (have < size() ? " (truncated)" : " (unexpected trailing data)")));
  return {};
}

Result<uint64_t> write_guest_memory(int fd, const GuestMemory& memory) {
  MemoryLayout layout = MemoryLayout::of(memory);
  TRY_STATUS(layout.validate());
  ignore_sigxfsz();
  // Sized first: a file-size limit or an oversized image fails here, before any data is written,
  // and every page left unwritten below reads back as zero.
  if (::ftruncate(fd, static_cast<off_t>(layout.total_size())) != 0)
    return sys_error(errno == EFBIG ? "size memory image (file-size limit, RLIMIT_FSIZE?)"
                                    : "size memory image");
  uint64_t written = 0;
  uint64_t offset = 0;
  for (const auto& r : memory.regions()) {
    const std::vector<bool> populated =
        r.mapping.anonymous_memory() ? populated_pages(r.host_base(), r.size) : std::vector<bool>{};
    written += TRY(write_region(fd, r.host_base(), r.size, offset, populated));
    offset += r.size;
  }
  return written;
}

Result<MemoryImage> memory_image_in_memfd(const GuestMemory& memory, const std::string& name) {
  UniqueFd fd(::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return sys_error("memfd_create " + name);
  TRY(write_guest_memory(fd.get(), memory));
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
    return sys_error("seal memory image memfd");
  return MemoryImage{std::move(fd), MemoryLayout::of(memory)};
}

Result<GuestMemory> map_guest_memory_private(const MemoryImage& image) {
  TRY_STATUS(image.layout.validate());
  TRY_STATUS(image.check_size());
  std::vector<GuestRegion> regions;
  regions.reserve(image.layout.regions.size());
  uint64_t offset = 0;
  for (const auto& spec : image.layout.regions) {
    auto map = TRY(MmapRegion::from_fd(image.fd.get(), spec.size, PROT_READ | PROT_WRITE,
                                       MAP_PRIVATE | MAP_NORESERVE, static_cast<off_t>(offset)));
    if (::madvise(map.data(), map.size(), MADV_DONTFORK) != 0)
      return sys_error("madvise(MADV_DONTFORK) on restored guest RAM");
    regions.push_back(GuestRegion{spec.start, spec.size, std::move(map)});
    offset += spec.size;
  }
  return GuestMemory::from_regions(std::move(regions));
}

}  // namespace carapace
