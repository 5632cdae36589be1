// Builds a virtio-blk device from its configuration (the machine's only entry into this folder).
#pragma once

#include <memory>
#include <string>

#include "common/base/result.h"
#include "vmm/devices/block/block_config.h"
#include "vmm/event/event_loop.h"
#include "vmm/virtio/virtio_device.h"

namespace carapace {

// Opens the image (O_RDONLY for read-only drives and for the base of an overlay) and the overlay.
// Bad paths or images are errors of kind kInvalidInput. The backend is io_uring where the kernel
// allows it, else synchronous; CARAPACE_BLOCK_BACKEND=sync|io_uring|auto overrides that (tests,
// benchmarks, debugging).
Result<std::shared_ptr<virtio::VirtioDevice>> make_block_device(const BlockDeviceConfig& config,
                                                                EventLoop& loop);

enum class BlockBackend;
// CARAPACE_BLOCK_BACKEND, parsed (unset means auto).
Result<BlockBackend> block_backend_from_env();
// The GET_ID serial when none is configured: the image's file name, cut to 20 bytes.
std::string default_block_serial(const std::string& path);

}  // namespace carapace
