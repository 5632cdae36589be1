// A virtio-rng device as plain data (`--rng`, snapshot restore).
#pragma once

#include "common/base/token_bucket.h"

namespace carapace {

struct RngDeviceConfig {
  RateLimiter::Config limit;
};

}  // namespace carapace
