// ChainReader / ChainWriter: byte streams over the driver-readable and device-writable parts of
// a validated DescriptorChain (crosvm's Reader/Writer shape). Devices never see guest addresses:
// every byte goes through GuestMemory, and the segments were checked to lie in RAM when the chain
// was parsed (docs/security.md #1).
//
// A reader or writer refers to its chain's segments: keep the chain alive while using them.
// Reads and writes are all-or-nothing: asking for more than available() is a guest error
// (kInvalidInput: the driver gave too small a buffer) and consumes nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "common/base/result.h"
#include "vmm/memory/guest_memory.h"

namespace carapace::virtio {

// One descriptor's buffer: [addr, addr + len) inside one RAM region.
struct Segment {
  GuestAddress addr;
  uint32_t len = 0;
};

// A position in a run of segments and a byte budget. Shared by ChainReader and ChainWriter.
class ChainCursor {
 public:
  // Bytes left to consume.
  size_t available() const { return remaining_; }
  // Bytes consumed so far (read, written or skipped).
  size_t consumed() const { return consumed_; }

  // Consumes `n` bytes without touching them.
  Status skip(size_t n);
  // The next contiguous stretch of guest memory, at most `max` bytes, as a host span with its
  // length (for building iovecs); consumed on return. Empty once nothing is left.
  Result<std::span<uint8_t>> next_slice(size_t max);

 protected:
  ChainCursor() = default;
  ChainCursor(const GuestMemory* mem, std::span<const Segment> segments, size_t total)
      : mem_(mem), segments_(segments), remaining_(total) {}

  // Keeps the first `n` bytes here and returns a cursor over the rest.
  Result<ChainCursor> split_cursor(size_t n);
  Status copy_out(std::span<uint8_t> out);
  Status copy_in(std::span<const uint8_t> in);

 private:
  template <typename F>
  Status walk(size_t n, F&& f);

  const GuestMemory* mem_ = nullptr;
  std::span<const Segment> segments_;
  size_t index_ = 0;     // current segment
  uint32_t offset_ = 0;  // into the current segment
  size_t remaining_ = 0;
  size_t consumed_ = 0;
};

class ChainReader : public ChainCursor {
 public:
  ChainReader() = default;
  ChainReader(const GuestMemory* mem, std::span<const Segment> segments, size_t total)
      : ChainCursor(mem, segments, total) {}

  Status read(std::span<uint8_t> out) { return copy_out(out); }
  template <typename T>
  Result<T> read_obj() {
    static_assert(std::is_trivially_copyable_v<T>);
    T out;
    TRY_STATUS(read({reinterpret_cast<uint8_t*>(&out), sizeof(T)}));
    return out;
  }
  size_t bytes_read() const { return consumed(); }

  // Keeps the first `n` bytes in this reader; returns a reader over the rest.
  Result<ChainReader> split_at(size_t n) { return ChainReader(TRY(split_cursor(n))); }

 private:
  explicit ChainReader(ChainCursor c) : ChainCursor(c) {}
};

class ChainWriter : public ChainCursor {
 public:
  ChainWriter() = default;
  ChainWriter(const GuestMemory* mem, std::span<const Segment> segments, size_t total)
      : ChainCursor(mem, segments, total) {}

  Status write(std::span<const uint8_t> in) { return copy_in(in); }
  template <typename T>
  Status write_obj(const T& obj) {
    static_assert(std::is_trivially_copyable_v<T>);
    return write({reinterpret_cast<const uint8_t*>(&obj), sizeof(T)});
  }
  size_t bytes_written() const { return consumed(); }

  // Keeps the first `n` bytes in this writer; returns a writer over the rest.
  Result<ChainWriter> split_at(size_t n) { return ChainWriter(TRY(split_cursor(n))); }
  // Returns a writer over the last `n` bytes and keeps the rest here: e.g. the status byte that
  // ends a block request (virtio 1.2 §5.2.6). A guest error when fewer than `n` are available.
  Result<ChainWriter> split_end(size_t n);

 private:
  explicit ChainWriter(ChainCursor c) : ChainCursor(c) {}
};

}  // namespace carapace::virtio
