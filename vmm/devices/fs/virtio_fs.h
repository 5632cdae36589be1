// virtio-fs (virtio 1.2 §5.11): a hiprio queue (FORGET, BATCH_FORGET) and one request queue,
// each chain one FUSE request served by the FileServer; a read-only config space of the tag the
// guest mounts by and the number of request queues (§5.11.4). No feature bits (no notification
// queue, §5.11.3; no DAX window, §5.11.5).
//
// Not wired into the machine yet: no CLI flag, no slot in VirtioDeviceSet, no seccomp role.
// Snapshots are refused: the guest's node ids and handles name host fds that cannot travel.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>

#include "vmm/devices/fs/file_server.h"
#include "vmm/devices/fs/fs_config.h"
#include "vmm/virtio/device_base.h"

namespace carapace {

class VirtioFs : public virtio::DeviceBase {
 public:
  static constexpr uint16_t kQueueSize = 256;
  // virtio 1.2 §5.11.1: device ID 26. Not yet in virtio::DeviceType (nothing that names devices
  // by type knows this one until it is wired).
  static constexpr uint32_t kDeviceType = 26;
  static constexpr size_t kTagBytes = 36;

  // The tag must be 1..36 bytes with no NUL; the share must open (FileServer::create).
  static Result<std::shared_ptr<VirtioFs>> create(const FsDeviceConfig& config);

  void read_config(uint64_t offset, std::span<uint8_t> data) const override;
  Status activate(virtio::ActivationContext ctx) override;
  void reset() override;
  void queue_notify(uint16_t index) override;
  Result<virtio::DeviceSnapshot> save() override;

  fs::FsCounters counters() const;

 private:
  // virtio 1.2 §5.11.4, little-endian.
  struct Config {
    uint8_t tag[kTagBytes];
    uint32_t num_request_queues;
  };
  static_assert(sizeof(Config) == 40);
  static constexpr uint16_t kQueueMaxSizes[] = {kQueueSize, kQueueSize};  // hiprio, request

  VirtioFs(std::unique_ptr<fs::FileServer> server, const Config& config);
  void process_locked(uint16_t index);

  std::unique_ptr<fs::FileServer> server_;
  Config config_{};
  bool broken_ = false;  // NEEDS_RESET reported; wait for reset
};

}  // namespace carapace
