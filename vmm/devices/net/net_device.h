// virtio-net (virtio 1.2 §5.1): one receive queue (0) and one transmit queue (1), a MAC in the
// configuration space (VIRTIO_NET_F_MAC) and link status (VIRTIO_NET_F_STATUS, always up).
// No offloads, no mergeable buffers, no control queue: every frame travels behind a 12-byte
// virtio_net_hdr_v1 in one descriptor chain, and the device writes num_buffers = 1 (§5.1.6.4).
//
// TX: each chain's header is skipped (nothing to honour without offloads), the frame is copied
// out of guest memory once, checked (runt, oversized, egress policy; docs/security.md #16) and
// handed to the backend; drops are counted by reason. A backend whose queue is full (EAGAIN)
// pushes back instead of losing the frame: the device keeps that one frame (its chain is
// returned), takes no more TX chains, and resumes when the backend fd is writable (EPOLLOUT).
// The guest's TX ring fills and its driver stops the queue, as with a real NIC.
// RX: the device holds at most one frame from the backend. When the guest's RX ring has no
// buffer for it, the device stops watching the backend fd (it leaves the event loop) and waits
// for the driver's RX notify; further frames wait in the kernel's bounded socket/TAP queue,
// which drops (and counts, on its side) what it cannot hold. Host memory stays bounded and the
// event loop never spins on a readable fd it cannot serve (docs/security.md #12, #16).
// Both directions have a FrameLimiter; a throttled direction resumes from a timerfd. Each
// handler run serves at most kBudget frames per direction and then yields the event loop
// (level-triggered EPOLLIN or the timer brings it back), so one guest cannot starve the others.
//
// Threading: everything runs under mu_ - queue_notify and the backend/timer handlers on the
// event loop thread, activate/reset on a vCPU thread. Handlers hold a weak_ptr to the device.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/base/unique_fd.h"
#include "vmm/devices/net/frame_limiter.h"
#include "vmm/devices/net/net_backend.h"
#include "vmm/devices/net/net_config.h"
#include "vmm/devices/net/net_counters.h"
#include "vmm/virtio/device_base.h"

namespace carapace::net {

class NetDevice : public virtio::DeviceBase, public std::enable_shared_from_this<NetDevice> {
 public:
  static constexpr uint16_t kRxQueue = 0, kTxQueue = 1;
  static constexpr uint16_t kQueueSize = 256;
  static constexpr uint64_t kFeatures = (1ull << kFMac) | (1ull << kFStatus);
  // Frames per direction per handler run before yielding the event loop.
  static constexpr size_t kBudget = 256;

  // `config.mac` is used as given (the factory fills in a generated one); the backend fields of
  // `config` are not looked at: `backend` is already open.
  static Result<std::shared_ptr<NetDevice>> create(const NetDeviceConfig& config,
                                                   std::unique_ptr<NetBackend> backend);
  ~NetDevice() override;

  void read_config(uint64_t offset, std::span<uint8_t> data) const override;

  Status activate(virtio::ActivationContext ctx) override;
  void reset() override;
  void queue_notify(uint16_t index) override;

  // Snapshot (DeviceBase, state version 1): nothing but the queues. RX gives an empty ring back
  // (undo_pop) and TX completes each chain as it goes, so nothing is in flight at a save. The
  // MAC and the backend come from the restoring VM's configuration, so a clone has its own
  // network identity; a frame held for the guest stays with the old backend (a network may drop
  // a frame).

  const NetCounters& counters() const { return counters_; }
  std::array<uint8_t, 6> mac() const;
  // For tests: RX is waiting for guest buffers (the backend fd is out of the event loop).
  bool rx_waiting_for_buffers() const;
  // For tests: the backend fd is in the event loop for reading.
  bool rx_armed() const;
  // For tests: a TX frame waits for the backend to take it.
  bool tx_waiting_for_backend() const;

 private:
  static constexpr uint16_t kQueueMaxSizes[] = {kQueueSize, kQueueSize};

  // virtio 1.2 §5.1.4: struct virtio_net_config up to `status` (max_virtqueue_pairs and later
  // fields belong to features we do not offer and read as zero).
  struct ConfigSpace {
    uint8_t mac[6];
    uint16_t status;  // kStatusLinkUp
  } __attribute__((packed));

  enum class RxRead { kGot, kDropped, kDrained, kFailed };

  NetDevice(const NetDeviceConfig& config, std::unique_ptr<NetBackend> backend, UniqueFd timer);

  // net_device.cpp: lifecycle and events.
  void on_backend_event(uint32_t events);
  void on_timer();
  void arm_rx_locked();
  void disarm_rx_locked();
  // Registers the backend fd for `events` (EPOLLIN for RX, EPOLLOUT while a TX frame is held);
  // the loop has no "modify", so a change re-registers.
  void set_backend_events_locked(uint32_t events);
  void schedule_timer_locked(uint64_t ns);
  void stop_events_locked();
  void go_broken_locked(const Error& why);
  void warn_locked(const char* what, const Error& e);

  // net_datapath.cpp: the two queues.
  void process_rx_locked();
  RxRead read_backend_locked();
  bool deliver_locked(virtio::Queue& q, const virtio::DescriptorChain& chain);
  void process_tx_locked();
  // False when the frame is held for a full backend (stop taking chains).
  bool transmit_locked(const virtio::DescriptorChain& chain);
  // Sends the held frame; false while the backend is still full.
  bool send_held_locked();
  void count_sent_locked(const Status& sent, size_t len);

  const ConfigSpace config_;
  const bool egress_policy_;
  const std::vector<EgressRule> allow_;
  const RateLimiter::Config rx_limit_config_, tx_limit_config_;
  const std::unique_ptr<NetBackend> backend_;
  NetCounters counters_;

  EventLoop* loop_ = nullptr;  // ctx_->loop while active
  UniqueFd timer_;             // timerfd: rate-limit and budget resumes
  bool timer_registered_ = false;
  uint64_t timer_deadline_ns_ = 0;  // 0: not armed
  uint32_t backend_events_ = 0;     // what the backend fd is registered for (EPOLLIN/EPOLLOUT)
  bool rx_waiting_ = false;         // a frame is held and the RX ring is empty
  bool rx_throttled_ = false, tx_throttled_ = false;
  bool broken_ = false;  // NEEDS_RESET reported; wait for reset
  FrameLimiter rx_limiter_, tx_limiter_;
  std::vector<uint8_t> rx_frame_;  // kMaxFrameLen + 1: a longer frame shows as truncated
  size_t rx_pending_ = 0;          // length of the held frame in rx_frame_; 0: none
  std::vector<uint8_t> tx_frame_;  // the frame being sent, copied out of guest memory
  size_t tx_held_ = 0;             // length of a frame in tx_frame_ the backend refused; 0: none
  uint32_t warnings_left_ = 8;     // host-side warnings logged before going quiet
};

}  // namespace carapace::net
