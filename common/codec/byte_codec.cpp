#include "common/codec/byte_codec.h"

#include <cstring>

namespace carapace {
namespace {

// "length 9 above the limit 8": a declared size the reader refuses before reading a byte.
std::string above_limit(const char* which, uint64_t n, uint64_t limit) {
  return std::string(which) + " " + std::to_string(n) + " above the limit " + std::to_string(limit);
}

}  // namespace

// resize + memcpy rather than vector::insert: GCC 12 reports a false -Wstringop-overflow for the
// inlined insert.
void ByteWriter::bytes(std::span<const uint8_t> b) {
  if (b.empty()) return;
  size_t old = buf_.size();
  buf_.resize(old + b.size());
  std::memcpy(buf_.data() + old, b.data(), b.size());
}

void ByteWriter::string(std::string_view s) {
  u32(static_cast<uint32_t>(s.size()));
  bytes({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

void ByteWriter::short_blob(std::span<const uint8_t> b) {
  u32(static_cast<uint32_t>(b.size()));
  bytes(b);
}

void ByteWriter::blob(std::span<const uint8_t> b) {
  u64(b.size());
  bytes(b);
}

Error ByteReader::error(const char* what, const std::string& problem) const {
  return as_invalid_input(
      make_error(std::string(what) + " at offset " + std::to_string(pos_) + ": " + problem));
}

Result<uint64_t> ByteReader::get_le(const char* what, int n) {
  if (remaining() < static_cast<size_t>(n))
    return error(what, "truncated (" + std::to_string(n) + " bytes needed, " +
                           std::to_string(remaining()) + " left)");
  uint64_t v = 0;
  for (int i = 0; i < n; ++i)
    v |= uint64_t{data_[pos_ + i]} << (8 * i);
  pos_ += n;
  return v;
}

Result<uint8_t> ByteReader::u8(const char* what) {
  return static_cast<uint8_t>(TRY(get_le(what, 1)));
}
Result<uint16_t> ByteReader::u16(const char* what) {
  return static_cast<uint16_t>(TRY(get_le(what, 2)));
}
Result<uint32_t> ByteReader::u32(const char* what) {
  return static_cast<uint32_t>(TRY(get_le(what, 4)));
}
Result<uint64_t> ByteReader::u64(const char* what) {
  return TRY(get_le(what, 8));
}

Result<bool> ByteReader::boolean(const char* what) {
  uint8_t v = TRY(u8(what));
  if (v > 1) return error(what, "boolean is " + std::to_string(v));
  return v == 1;
}

Result<std::span<const uint8_t>> ByteReader::bytes(const char* what, uint64_t n) {
  if (n > remaining())
    return error(what, "length " + std::to_string(n) + " exceeds the " +
                           std::to_string(remaining()) + " bytes left");
  auto out = data_.subspan(pos_, n);
  pos_ += n;
  return out;
}

Result<std::string> ByteReader::string(const char* what, uint32_t max_len) {
  uint32_t len = TRY(u32(what));
  if (len > max_len) return error(what, above_limit("length", len, max_len));
  auto b = TRY(bytes(what, len));
  return std::string(b.begin(), b.end());
}

Result<std::span<const uint8_t>> ByteReader::short_blob_view(const char* what, uint32_t max_len) {
  uint32_t len = TRY(u32(what));
  if (len > max_len) return error(what, above_limit("length", len, max_len));
  return bytes(what, len);
}

Result<std::span<const uint8_t>> ByteReader::blob_view(const char* what, uint64_t max_len) {
  uint64_t len = TRY(u64(what));
  if (len > max_len) return error(what, above_limit("length", len, max_len));
  return bytes(what, len);
}

Result<std::vector<uint8_t>> ByteReader::blob(const char* what, uint64_t max_len) {
  auto b = TRY(blob_view(what, max_len));
  return std::vector<uint8_t>(b.begin(), b.end());
}

Result<uint32_t> ByteReader::count(const char* what, uint64_t min_item_bytes, uint32_t max_count) {
  uint32_t n = TRY(u32(what));
  if (n > max_count) return error(what, above_limit("count", n, max_count));
  uint64_t need;
  if (__builtin_mul_overflow(uint64_t{n}, min_item_bytes, &need) || need > remaining())
    return error(what, "count " + std::to_string(n) + " cannot fit in the " +
                           std::to_string(remaining()) + " bytes left");
  return n;
}

Status ByteReader::expect_end(const char* what) const {
  if (!at_end()) return error(what, std::to_string(remaining()) + " unexpected trailing bytes");
  return {};
}

}  // namespace carapace
