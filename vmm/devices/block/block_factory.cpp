#include "vmm/devices/block/block_factory.h"

#include <cstdlib>
#include <string_view>

#include "vmm/devices/block/virtio_block.h"

namespace carapace {

Result<BlockBackend> block_backend_from_env() {
  const char* v = std::getenv("CARAPACE_BLOCK_BACKEND");
  const std::string_view s = v ? v : "";
  if (s.empty() || s == "auto") return BlockBackend::kAuto;
  if (s == "sync") return BlockBackend::kSync;
  if (s == "io_uring" || s == "uring") return BlockBackend::kIoUring;
  return as_invalid_input(
      make_error("CARAPACE_BLOCK_BACKEND=" + std::string(s) + ": expected auto, sync or io_uring"));
}

std::string default_block_serial(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.size() > VIRTIO_BLK_ID_BYTES) name.resize(VIRTIO_BLK_ID_BYTES);
  return name;
}

Result<std::shared_ptr<virtio::VirtioDevice>> make_block_device(const BlockDeviceConfig& config,
                                                                EventLoop&) {
  const BlockBackend backend = TRY(block_backend_from_env());
  if (config.serial.size() > VIRTIO_BLK_ID_BYTES)
    return as_invalid_input(make_error("--drive serial: at most 20 bytes (virtio-blk GET_ID)"));
  std::unique_ptr<block::DiskImage> image;
  if (!config.overlay_path.empty()) {
    if (config.read_only)
      return as_invalid_input(make_error("--drive: overlay= makes a writable disk; drop ro=on"));
    image = TRY(block::open_overlay_image(config.path, config.overlay_path));
  } else {
    image = TRY(block::open_raw_image(config.path, config.read_only));
  }
  const std::string serial =
      config.serial.empty() ? default_block_serial(config.path) : config.serial;
  std::shared_ptr<virtio::VirtioDevice> dev =
      TRY(VirtioBlock::create(std::move(image), serial, config.limit, backend));
  return dev;
}

}  // namespace carapace
