#include "vmm/virtio/chain_io.h"

#include <algorithm>
#include <cstring>

#include "vmm/virtio/ring_layout.h"

namespace carapace::virtio {

// Visits the next `n` bytes as host spans, advancing the cursor. The caller has checked
// n <= remaining_, so the walk never runs past the last segment.
template <typename F>
Status ChainCursor::walk(size_t n, F&& f) {
  while (n > 0) {
    const Segment& s = segments_[index_];
    const size_t chunk = std::min<size_t>(n, s.len - offset_);
    if (chunk > 0) {
      // Segments were checked at parse time; slice() checks again, so a bug here is an error,
      // never an out-of-bounds access.
      auto host = TRY(mem_->slice(s.addr.unchecked_add(offset_), chunk));
      f(host);
    }
    n -= chunk;
    remaining_ -= chunk;
    consumed_ += chunk;
    offset_ += static_cast<uint32_t>(chunk);
    if (offset_ == s.len) {
      ++index_;
      offset_ = 0;
    }
  }
  return {};
}

Status ChainCursor::skip(size_t n) {
  if (n > remaining_) return guest_error("virtqueue: buffer too short to skip");
  return walk(n, [](std::span<uint8_t>) {});
}

Result<std::span<uint8_t>> ChainCursor::next_slice(size_t max) {
  // Skip exhausted segments so the returned span is never empty while bytes remain.
  while (remaining_ > 0 && offset_ == segments_[index_].len) {
    ++index_;
    offset_ = 0;
  }
  if (remaining_ == 0 || max == 0) return std::span<uint8_t>();
  const Segment& s = segments_[index_];
  const size_t chunk = std::min({max, remaining_, size_t{s.len - offset_}});
  std::span<uint8_t> out;
  TRY_STATUS(walk(chunk, [&](std::span<uint8_t> host) { out = host; }));
  return out;
}

Result<ChainCursor> ChainCursor::split_cursor(size_t n) {
  if (n > remaining_) return guest_error("virtqueue: buffer too short to split");
  ChainCursor rest = *this;
  // Advance the copy past the first n bytes without touching memory.
  TRY_STATUS(rest.walk(n, [](std::span<uint8_t>) {}));
  rest.consumed_ = 0;
  remaining_ = n;
  return rest;
}

Status ChainCursor::copy_out(std::span<uint8_t> out) {
  if (out.size() > remaining_) return guest_error("virtqueue: readable buffer too short");
  size_t pos = 0;
  return walk(out.size(), [&](std::span<uint8_t> host) {
    std::memcpy(out.data() + pos, host.data(), host.size());
    pos += host.size();
  });
}

Status ChainCursor::copy_in(std::span<const uint8_t> in) {
  if (in.size() > remaining_) return guest_error("virtqueue: writable buffer too short");
  size_t pos = 0;
  return walk(in.size(), [&](std::span<uint8_t> host) {
    std::memcpy(host.data(), in.data() + pos, host.size());
    pos += host.size();
  });
}

Result<ChainWriter> ChainWriter::split_end(size_t n) {
  if (n > available()) return guest_error("virtqueue: writable buffer too short");
  return split_at(available() - n);
}

}  // namespace carapace::virtio
