#include "vmm/virtio/virtio_device.h"

#include <algorithm>
#include <cstring>

namespace carapace::virtio {

const char* device_type_name(uint32_t type) {
  switch (static_cast<DeviceType>(type)) {
    case DeviceType::kNet:
      return "net";
    case DeviceType::kBlock:
      return "block";
    case DeviceType::kRng:
      return "rng";
    case DeviceType::kVsock:
      return "vsock";
    case DeviceType::kFs:
      return "fs";
  }
  return "virtio";
}

std::vector<QueueState> queue_states(const std::optional<ActivationContext>& ctx) {
  std::vector<QueueState> out;
  if (!ctx) return out;
  for (const Queue& q : ctx->queues)
    out.push_back(q.save());
  return out;
}

namespace {

// The overlap of [offset, offset + len) with [0, size): where it starts in the config and its
// length (it always starts at data[0]). Written to be overflow-free for any 64-bit offset.
struct Overlap {
  size_t config_pos = 0, len = 0;
};

Overlap overlap(size_t size, uint64_t offset, size_t len) {
  Overlap o;
  if (offset >= size) return o;
  o.config_pos = offset;
  o.len = std::min<size_t>(len, size - offset);
  return o;
}

}  // namespace

void read_config_bytes(std::span<const uint8_t> config, uint64_t offset, std::span<uint8_t> data) {
  const Overlap o = overlap(config.size(), offset, data.size());
  if (o.len) std::memcpy(data.data(), config.data() + o.config_pos, o.len);
}

void write_config_bytes(std::span<uint8_t> config, uint64_t offset, std::span<const uint8_t> data) {
  const Overlap o = overlap(config.size(), offset, data.size());
  if (o.len) std::memcpy(config.data() + o.config_pos, data.data(), o.len);
}

}  // namespace carapace::virtio
