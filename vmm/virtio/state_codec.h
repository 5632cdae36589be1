// StateWriter / StateReader: the little-endian encoding of virtio device state in snapshots
// (transport registers, queue cursors, each device's own part). Snapshot bytes may be corrupt or
// hostile: every read is bounded by what remains and fails with a guest-input error naming the
// field, never reads past the end and never allocates from a stored length.
//
// (snapshot/byte_codec.h is the same idea one library up; carapace_vmm cannot depend on it.)
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "common/base/result.h"

namespace carapace::virtio {

class StateWriter {
 public:
  void u8(uint8_t v) { put(v, 1); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  // u32 length, then the bytes.
  void bytes(std::span<const uint8_t> b) {
    u32(static_cast<uint32_t>(b.size()));
    if (b.empty()) return;
    // resize + memcpy: GCC 12 reports a false -Wstringop-overflow for an inlined insert.
    const size_t old = buf_.size();
    buf_.resize(old + b.size());
    std::memcpy(buf_.data() + old, b.data(), b.size());
  }
  std::vector<uint8_t> take() { return std::move(buf_); }

 private:
  void put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i)
      buf_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> buf_;
};

class StateReader {
 public:
  explicit StateReader(std::span<const uint8_t> data) : data_(data) {}

  Result<uint8_t> u8(const char* what) { return static_cast<uint8_t>(TRY(get(what, 1))); }
  Result<uint16_t> u16(const char* what) { return static_cast<uint16_t>(TRY(get(what, 2))); }
  Result<uint32_t> u32(const char* what) { return static_cast<uint32_t>(TRY(get(what, 4))); }
  Result<uint64_t> u64(const char* what) { return get(what, 8); }
  // Only 0 and 1: anything else is corruption, not "true".
  Result<bool> boolean(const char* what) {
    const uint8_t v = TRY(u8(what));
    if (v > 1) return fail(what, "boolean is " + std::to_string(v));
    return v == 1;
  }
  // The counterpart of StateWriter::bytes: a view (valid while the input lives).
  Result<std::span<const uint8_t>> bytes(const char* what) {
    const uint32_t n = TRY(u32(what));
    if (n > remaining())
      return fail(what, "length " + std::to_string(n) + " exceeds the " +
                            std::to_string(remaining()) + " bytes left");
    auto out = data_.subspan(pos_, n);
    pos_ += n;
    return out;
  }
  // Refuses trailing bytes.
  Status expect_end(const char* what) const {
    if (pos_ != data_.size())
      return fail(what, std::to_string(data_.size() - pos_) + " unexpected trailing bytes");
    return {};
  }
  size_t remaining() const { return data_.size() - pos_; }

 private:
  Error fail(const char* what, const std::string& problem) const {
    return as_invalid_input(make_error(std::string("virtio state: ") + what + " at offset " +
                                       std::to_string(pos_) + ": " + problem));
  }
  Result<uint64_t> get(const char* what, size_t n) {
    if (remaining() < n) return fail(what, "truncated");
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i)
      v |= uint64_t{data_[pos_ + i]} << (8 * i);
    pos_ += n;
    return v;
  }

  std::span<const uint8_t> data_;
  size_t pos_ = 0;
};

// Each device part starts with the device's own u32 format version; an unknown one is refused.
inline Status expect_version(StateReader& r, uint32_t version, const char* device) {
  const uint32_t v = TRY(r.u32("device state version"));
  if (v != version)
    return as_invalid_input(make_error(std::string(device) + ": snapshot state version " +
                                       std::to_string(v) + ", this build reads " +
                                       std::to_string(version)));
  return {};
}

}  // namespace carapace::virtio
