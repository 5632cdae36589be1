// EchoDevice: a test-only virtio device. Two queues; each request's readable bytes are copied
// into its writable buffers. Config space: a read-only 32-bit magic and a writable 32-bit
// scratch word. Used by the transport tests and the fuzzers to drive the core end to end.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "vmm/virtio/ring_layout.h"
#include "vmm/virtio/virtio_device.h"

namespace carapace::virtio::fake {

class EchoDevice : public VirtioDevice {
 public:
  static constexpr uint32_t kType = 0x7e;       // not a real virtio device type
  static constexpr uint64_t kFeatureUpper = 1;  // a device-specific feature bit
  static constexpr uint32_t kMagic = 0x6f686365;

  uint32_t device_type() const override { return kType; }
  std::span<const uint16_t> queue_max_sizes() const override { return kMaxSizes; }
  uint64_t device_features() const override { return kFeatureUpper; }

  void read_config(uint64_t offset, std::span<uint8_t> data) const override {
    std::lock_guard<std::mutex> lock(mu_);
    read_config_bytes(config_, offset, data);
  }
  void write_config(uint64_t offset, std::span<const uint8_t> data) override {
    std::lock_guard<std::mutex> lock(mu_);
    // Only the scratch word (bytes 4..7) is writable.
    if (offset >= 8) return;
    std::array<uint8_t, 8> copy = config_;
    write_config_bytes(copy, offset, data);
    std::memcpy(config_.data() + 4, copy.data() + 4, 4);
  }

  Status activate(ActivationContext ctx) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (refuse_activation) return guest_error("echo: refused");
    if (!ctx.queues[0].ready()) return guest_error("echo: queue 0 not ready");
    ctx_ = std::move(ctx);
    ++activations;
    return {};
  }
  void reset() override {
    std::lock_guard<std::mutex> lock(mu_);
    ctx_.reset();
    ++resets;
  }
  void queue_notify(uint16_t index) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++notifies;
    if (!ctx_ || index >= ctx_->queues.size()) return;
    Queue& q = ctx_->queues[index];
    do {
      for (;;) {
        auto next = q.pop();
        if (!next.ok()) {
          ctx_->signals->report_needs_reset(next.error());
          return;
        }
        if (!next->has_value()) break;
        DescriptorChain& chain = **next;
        auto reader = chain.reader();
        auto writer = chain.writer();
        std::vector<uint8_t> buf(std::min(reader.available(), writer.available()));
        if (!reader.read(buf).ok() || !writer.write(buf).ok()) ++failures;
        (void)q.add_used(chain.head(), static_cast<uint32_t>(writer.bytes_written()));
        ++served;
      }
    } while (q.enable_notification());
    if (q.needs_notification()) ctx_->signals->signal_used(index);
  }

  // Snapshot: the queues and the scratch word.
  Result<DeviceSnapshot> save() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (refuse_save) return make_error("echo: save refused");
    return DeviceSnapshot{queue_states(ctx_),
                          std::vector<uint8_t>(config_.begin() + 4, config_.end())};
  }
  Status restore(std::span<const uint8_t> device, std::optional<ActivationContext> ctx) override {
    if (device.size() != 4) return guest_error("echo: state is not 4 bytes");
    if (refuse_restore) return guest_error("echo: restore refused");
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::memcpy(config_.data() + 4, device.data(), 4);
      ++restores;
    }
    if (ctx) return activate(std::move(*ctx));
    return {};
  }

  // Test hooks.
  void change_config() {
    std::lock_guard<std::mutex> lock(mu_);
    if (ctx_) ctx_->signals->signal_config_change();
  }
  bool active() const {
    std::lock_guard<std::mutex> lock(mu_);
    return ctx_.has_value();
  }
  uint64_t acked_features() const {
    std::lock_guard<std::mutex> lock(mu_);
    return ctx_ ? ctx_->acked_features : 0;
  }

  bool refuse_activation = false, refuse_save = false, refuse_restore = false;
  std::atomic<int> activations{0}, resets{0}, notifies{0}, served{0}, failures{0}, restores{0};

 private:
  static constexpr uint16_t kMaxSizes[] = {16, 8};
  mutable std::mutex mu_;
  std::array<uint8_t, 8> config_ = {0x65, 0x63, 0x68, 0x6f, 0, 0, 0, 0};
  std::optional<ActivationContext> ctx_;
};

}  // namespace carapace::virtio::fake
