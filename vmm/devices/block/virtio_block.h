// virtio-blk (virtio 1.2 §5.2): one request queue over a DiskImage (raw image, read-only or
// writable, or a copy-on-write overlay over a shared base).
//
// Backends: io_uring (UringEngine) for raw images, completions on an eventfd in the event loop,
// requests completing out of order; or synchronous preadv/pwritev/fdatasync on the event loop
// thread, used when io_uring is unavailable, when forced (BlockBackend::kSync, or
// CARAPACE_BLOCK_BACKEND=sync through the factory), and always for overlays.
//
// In-flight requests live in a fixed table of kQueueSize slots holding their DescriptorChain
// (whose guest buffers the kernel reads or writes) and iovecs. Queue::pop() never hands out more
// than the queue size unfinished chains, so the table never grows (docs/security.md #12). reset()
// cancels and waits for every in-flight io_uring request before it drops anything, so a guest
// resetting the device mid-I/O cannot make the kernel write into freed memory.
//
// A token-bucket rate limiter (bytes and operations) gates each request before its I/O; a
// throttled queue waits on a timerfd in the event loop and resumes.
//
// Without an event loop (unit tests, fuzzing, the bench), queue_notify() waits for the io_uring
// completions of what it submitted before it returns.
#pragma once

#include <linux/virtio_blk.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/base/token_bucket.h"
#include "common/base/unique_fd.h"
#include "vmm/devices/block/disk_image.h"
#include "vmm/devices/block/request.h"
#include "vmm/devices/block/uring_engine.h"
#include "vmm/virtio/device_base.h"

namespace carapace {

enum class BlockBackend {
  kAuto,     // io_uring when the kernel allows it, else synchronous
  kIoUring,  // io_uring or fail (tests and the bench)
  kSync,     // synchronous preadv/pwritev/fdatasync
};

// Counters, readable from any thread (BlockDevice::counters()).
struct BlockCounters {
  uint64_t requests = 0;     // requests answered, dropped ones included
  uint64_t read_bytes = 0;   // moved from the disk to the guest
  uint64_t write_bytes = 0;  // moved from the guest to the disk
  uint64_t flushes = 0;
  uint64_t errors = 0;     // answered IOERR or UNSUPP, or dropped (guest and host causes)
  uint64_t io_errors = 0;  // of those, host I/O failures
  uint64_t throttled = 0;  // times the rate limiter stopped the queue
};

class VirtioBlock : public virtio::DeviceBase, public std::enable_shared_from_this<VirtioBlock> {
 public:
  static constexpr uint16_t kQueueSize = 256;
  // DISCARD punches holes (cheap at any size); WRITE_ZEROES may fall back to writing zero bytes,
  // so its requests are kept smaller.
  static constexpr uint32_t kMaxDiscardSectors = 1u << 22;      // 2 GiB
  static constexpr uint32_t kMaxWriteZeroesSectors = 1u << 17;  // 64 MiB

  // `serial`: the GET_ID answer, at most 20 bytes (longer is cut).
  static Result<std::shared_ptr<VirtioBlock>> create(std::unique_ptr<block::DiskImage> image,
                                                     const std::string& serial,
                                                     const RateLimiter::Config& limit,
                                                     BlockBackend backend);
  ~VirtioBlock() override;

  void read_config(uint64_t offset, std::span<uint8_t> data) const override;

  Status activate(virtio::ActivationContext ctx) override;
  void reset() override;
  void queue_notify(uint16_t index) override;

  // Snapshot (block_state.cpp). save() first completes every request in flight on io_uring
  // (waiting up to 5 s; the guest is paused, so nothing new arrives), then records the capacity
  // and read-only flag. The configuration space is not saved: it is derived from the drive the
  // restoring VM was given, which must have the same capacity and mode, or restore refuses it
  // (the guest's file system would otherwise run past the end or write to a read-only disk).
  static constexpr uint32_t kStateVersion = 1;
  Result<virtio::DeviceSnapshot> save() override;
  Status restore(std::span<const uint8_t> device,
                 std::optional<virtio::ActivationContext> ctx) override;

  BlockCounters counters() const;
  bool using_io_uring() const;
  bool throttled() const;
  // Requests handed to io_uring and not yet completed (at most the queue size).
  size_t in_flight() const;
  // On by default: completions that are ready right after a submit (page-cache hits) are
  // answered at once instead of one event-loop round trip later. Tests turn it off to keep
  // requests in flight until the event loop (or a reset) takes them.
  void set_reap_on_submit(bool on);
  const block::DiskImage& image() const { return *image_; }

 private:
  static constexpr uint16_t kQueueMaxSizes[] = {kQueueSize};

  // One request in flight on io_uring.
  struct Slot {
    std::optional<virtio::DescriptorChain> chain;  // engaged while in use
    block::BlockRequest req;
    size_t iov_start = 0;  // resubmitting after a short transfer
    uint64_t done = 0;
    uint32_t generation = 0;
  };

  struct AtomicCounters {
    std::atomic<uint64_t> requests{0}, read_bytes{0}, write_bytes{0}, flushes{0}, errors{0},
        io_errors{0}, throttled{0};
  };

  VirtioBlock(std::unique_ptr<block::DiskImage> image, const std::string& serial,
              const RateLimiter::Config& limit, UniqueFd timer,
              std::unique_ptr<block::UringEngine> engine);

  // All *_locked run with mu_ held.
  void run_locked();
  void process_locked();
  // false: throttled (the chain must go back to the ring).
  bool start_locked(virtio::DescriptorChain chain);
  bool admit_locked(uint64_t bytes);
  void throttle_locked(uint64_t bytes);
  void execute_sync_locked(const virtio::DescriptorChain& chain, block::BlockRequest& req);
  bool submit_locked(Slot& slot, uint64_t tag);
  void on_completion_locked(uint64_t tag, int32_t result);
  // req == nullptr: a dropped request (no status byte).
  void finish_locked(uint16_t head, block::BlockRequest* req, uint8_t status, bool host_error);
  void release_slot_locked(uint16_t index);
  void drain_locked();
  // Waits for every io_uring request and completes it into the used ring (snapshots).
  Status finish_in_flight_locked();
  Status register_fds_locked(EventLoop& loop);
  void unregister_fds_locked();
  void on_engine_event();
  void on_timer();
  void arm_timer(uint64_t ns);

  const RateLimiter::Config limit_config_;
  std::unique_ptr<block::DiskImage> image_;
  block::DiskLimits limits_;
  virtio_blk_config config_{};
  std::array<uint8_t, VIRTIO_BLK_ID_BYTES> serial_{};
  AtomicCounters stats_;
  std::atomic<uint32_t> warnings_left_{8};

  bool broken_ = false;  // NEEDS_RESET reported
  bool reap_on_submit_ = true;
  bool throttled_ = false;
  TokenBucket ops_bucket_, bytes_bucket_;
  UniqueFd timer_;             // timerfd: resumes a throttled queue
  EventLoop* loop_ = nullptr;  // where our fds are registered
  bool engine_registered_ = false, timer_registered_ = false;
  block::BlockRequest sync_req_;  // reused by the synchronous path
  std::vector<Slot> slots_;       // kQueueSize entries when io_uring is used
  std::vector<uint16_t> free_slots_;
  uint32_t generation_ = 0;
  // Declared last so it is destroyed first: its destructor waits for the kernel to let go of
  // the slots' buffers.
  std::unique_ptr<block::UringEngine> engine_;
};

}  // namespace carapace
