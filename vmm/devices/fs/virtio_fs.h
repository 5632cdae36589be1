// virtio-fs (virtio 1.2 §5.11): a hiprio queue (FORGET, BATCH_FORGET) and one request queue,
// each chain one FUSE request served by the FileServer; a read-only config space of the tag the
// guest mounts by and the number of request queues (§5.11.4). No feature bits (no notification
// queue, §5.11.3; no DAX window, §5.11.5).
//
// The file server does blocking host file I/O, so the machine gives every VirtioFs an event loop
// of its own (its transport's queue notifications wake that thread, which runs queue_notify
// under the `fs` seccomp role), never the shared device loop (README.md, Threads).
//
// A device may be unbound: made with a tag and no folder, it answers every request with
// kUnboundErrno until bind() gives it one (a pooled VM restored from a template, bound at
// hand-out). A snapshot carries the device only while no FUSE session is live: node ids and
// handles name host fds, which cannot travel (README.md, Snapshots).
#pragma once

#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "vmm/devices/fs/file_server.h"
#include "vmm/devices/fs/fs_config.h"
#include "vmm/virtio/device_base.h"

namespace carapace {

class VirtioFs : public virtio::DeviceBase {
 public:
  static constexpr uint16_t kQueueSize = 256;
  static constexpr size_t kTagBytes = 36;
  static constexpr uint32_t kStateVersion = 1;
  // What an unbound device answers, INIT included: FUSE's own "no server on this connection"
  // (Linux's fuse returns it for a connection whose server went away). Linux's virtiofs sends
  // INIT after mount(2) has returned, so no errno of ours fails the mount itself; the failed
  // INIT marks the connection broken and every call in the mount then fails (ECONNREFUSED).
  static constexpr int kUnboundErrno = ENOTCONN;

  // The tag must be 1..36 bytes with no NUL and no control character. With a shared_dir the
  // share must open (FileServer::create); without one the device starts unbound.
  static Result<std::shared_ptr<VirtioFs>> create(const FsDeviceConfig& config);

  // Binds `shared_dir` in `mode` (the share's other settings kept), replacing the folder bound
  // before, if any. Refused while a FUSE session is live: an invalid-input error with sys_errno
  // EBUSY (the control API's 409). A folder that does not open as a directory is invalid input.
  Status bind(const std::string& shared_dir, FsMode mode);

  struct Binding {
    std::string tag;
    std::string shared_dir;  // empty: unbound
    FsMode mode = FsMode::kReadOnly;
    bool session = false;  // a FUSE session is live (FileServer::has_session)
  };
  Binding binding() const;
  const std::string& tag() const { return share_.tag; }  // constant: no lock needed

  void read_config(uint64_t offset, std::span<uint8_t> data) const override;
  Status activate(virtio::ActivationContext ctx) override;
  void reset() override;
  void queue_notify(uint16_t index) override;
  // The version and the tag, only while no session is live; refused (one line) otherwise.
  Result<virtio::DeviceSnapshot> save() override;
  // The tag must be this device's: the guest's driver read it at probe time.
  Status restore(std::span<const uint8_t> device,
                 std::optional<virtio::ActivationContext> ctx) override;

  // Since the device was made, across binds; unbound refusals count as requests and errors.
  fs::FsCounters counters() const;

 private:
  // virtio 1.2 §5.11.4, little-endian.
  struct Config {
    uint8_t tag[kTagBytes];
    uint32_t num_request_queues;
  };
  static_assert(sizeof(Config) == 40);
  static constexpr uint16_t kQueueMaxSizes[] = {kQueueSize, kQueueSize};  // hiprio, request

  VirtioFs(const FsDeviceConfig& share, std::unique_ptr<fs::FileServer> server,
           const Config& space);
  void process_locked(uint16_t index);
  uint32_t serve_locked(const virtio::DescriptorChain& chain);
  bool live_locked() const { return server_ && server_->has_session(); }

  FsDeviceConfig share_;  // under mu_ but its tag, constant; shared_dir empty while unbound
  std::unique_ptr<fs::FileServer> server_;  // null while unbound
  Config space_{};
  fs::FsCounters retired_;  // servers replaced by bind(), and the unbound refusals
  bool broken_ = false;     // NEEDS_RESET reported; wait for reset
};

}  // namespace carapace
