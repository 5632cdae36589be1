// The saved state of a virtio device (transport registers, queue cursors, the device's own part)
// is encoded with the one byte codec (common/codec/byte_codec.h): every read bounded by what
// remains, errors are guest-input errors naming the field. This adds the version check each
// device part starts with.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/codec/byte_codec.h"

namespace carapace::virtio {

// Each device part starts with the device's own u32 format version; an unknown one is refused.
inline Status expect_version(ByteReader& r, uint32_t version, const char* device) {
  const uint32_t v = TRY(r.u32("device state version"));
  if (v != version)
    return as_invalid_input(make_error(std::string(device) + ": snapshot state version " +
                                       std::to_string(v) + ", this build reads " +
                                       std::to_string(version)));
  return {};
}

// The part of a device whose whole state is in its queues (net, rng, vsock): the version alone.
inline std::vector<uint8_t> version_only_part(uint32_t version) {
  ByteWriter w;
  w.u32(version);
  return w.take();
}

// Reads such a part back: the version, then nothing ("DEVICE state" names what ran over).
inline Status expect_version_only(std::span<const uint8_t> part, uint32_t version,
                                  const char* device) {
  ByteReader r(part);
  TRY_STATUS(expect_version(r, version, device));
  return r.expect_end((std::string(device) + " state").c_str());
}

}  // namespace carapace::virtio
