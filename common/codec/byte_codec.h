// ByteWriter / ByteReader: the one explicit little-endian encoding of carapace's saved state (the
// snapshot state file's sections, each virtio device's own part). Saved bytes come from disk and
// may be corrupt or hostile, so every read is bounded by the bytes that remain, and
// every count or length is checked against them *before* anything is allocated (docs/security.md
// #20): a 100-byte file can never make the reader reserve gigabytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"

namespace carapace {

class ByteWriter {
 public:
  void u8(uint8_t v) { buf_.push_back(v); }
  void u16(uint16_t v) { put_le(v, 2); }
  void u32(uint32_t v) { put_le(v, 4); }
  void u64(uint64_t v) { put_le(v, 8); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  // Raw bytes, no length: the reader must know how many to expect.
  void bytes(std::span<const uint8_t> b);
  // u32 length + bytes.
  void string(std::string_view s);
  void short_blob(std::span<const uint8_t> b);
  // u64 length + bytes.
  void blob(std::span<const uint8_t> b);

  size_t size() const { return buf_.size(); }
  const std::vector<uint8_t>& data() const { return buf_; }
  std::vector<uint8_t> take() { return std::move(buf_); }

 private:
  void put_le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i)
      buf_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }

  std::vector<uint8_t> buf_;
};

// Reads from a span it does not own. Errors are ErrorKind::kInvalidInput and name the field and
// the offset, so a corrupt file says where it went wrong.
class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> data) : data_(data) {}

  Result<uint8_t> u8(const char* what);
  Result<uint16_t> u16(const char* what);
  Result<uint32_t> u32(const char* what);
  Result<uint64_t> u64(const char* what);
  // Only 0 and 1 are booleans; anything else is corruption, not "true".
  Result<bool> boolean(const char* what);
  // A view of the next `n` bytes (valid while the underlying buffer lives).
  Result<std::span<const uint8_t>> bytes(const char* what, uint64_t n);
  // The counterparts of ByteWriter::string / blob; the length must be <= max_len and fit in what
  // remains.
  Result<std::string> string(const char* what, uint32_t max_len);
  // The counterpart of ByteWriter::short_blob: a view, bounded by what remains.
  Result<std::span<const uint8_t>> short_blob_view(const char* what, uint32_t max_len = UINT32_MAX);
  Result<std::span<const uint8_t>> blob_view(const char* what, uint64_t max_len);
  Result<std::vector<uint8_t>> blob(const char* what, uint64_t max_len);
  // A u32 item count for items of at least `min_item_bytes` each: refused unless
  // count <= max_count and count * min_item_bytes <= remaining(), so a caller may reserve
  // `count` items safely.
  Result<uint32_t> count(const char* what, uint64_t min_item_bytes, uint32_t max_count);

  size_t offset() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  bool at_end() const { return pos_ == data_.size(); }
  // Refuses trailing bytes: a decoder calls this when it has read everything it knows about.
  Status expect_end(const char* what) const;

 private:
  Error error(const char* what, const std::string& problem) const;
  Result<uint64_t> get_le(const char* what, int n);

  std::span<const uint8_t> data_;
  size_t pos_ = 0;
};

}  // namespace carapace
