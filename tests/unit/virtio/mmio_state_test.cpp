// MmioTransport snapshots: save_state/restore_state round trips (the restored device goes on
// where the saved one stopped), and docs/security.md #22: restored transport and queue state is
// validated exactly as if the guest had just written it; every hostile blob is refused and leaves
// the device reset, ready for a good restore.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "tests/unit/virtio/mmio_driver.h"
#include "vmm/virtio/mmio_transport.h"

namespace carapace::virtio {
namespace {

using namespace fake;

// Byte offsets in the version-1 transport blob (mmio_transport_state.cpp).
constexpr size_t kOffStatus = 4, kOffNeedsReset = 8, kOffDriverFeatures = 21, kOffIntStatus = 29,
                 kOffQueueCount = 37, kOffQueue0 = 41, kQueueBytes = 33;
constexpr size_t kQNum = 0, kQReady = 4, kQDesc = 5, kQDriver = 13, kQDevice = 21, kQNextAvail = 29,
                 kQNextUsed = 31;

template <typename T>
void poke(std::vector<uint8_t>& b, size_t off, T v) {
  ASSERT_LE(off + sizeof v, b.size());
  std::memcpy(b.data() + off, &v, sizeof v);
}

class MmioStateTest : public MmioDriverTest {
 protected:
  // A second VM's device: same guest RAM (the "restored" memory), a fresh transport.
  void make_target() {
    dev2_ = std::make_shared<EchoDevice>();
    t2_ = std::move(MmioTransport::create(dev2_, mem_, &irq2_, nullptr, kMmioBase)).value();
  }
  uint32_t rd2(MmioReg r) { return mmio_read32(*t2_, r); }
  void wr2(MmioReg r, uint32_t v) { mmio_write32(*t2_, r, v); }
  std::vector<uint8_t> save() {
    auto b = t_->save_state();
    EXPECT_TRUE(b.ok()) << b.error().describe();
    return b.ok() ? *b : std::vector<uint8_t>{};
  }
  // The blob of a device the Linux driver has just set up, and a fresh target to restore it in.
  std::vector<uint8_t> init_save_and_make_target() {
    init_linux();
    auto blob = save();
    make_target();
    return blob;
  }
  // The target must look untouched: nothing applied, the device never activated.
  void expect_target_reset() {
    EXPECT_EQ(t2_->status(), 0u);
    EXPECT_EQ(t2_->interrupt_status(), 0u);
    EXPECT_EQ(t2_->acked_features(), 0u);
    EXPECT_FALSE(dev2_->active());
    EXPECT_EQ(dev2_->activations, 0);
  }
  size_t q(int index, size_t field) const { return kOffQueue0 + index * kQueueBytes + field; }

  std::shared_ptr<EchoDevice> dev2_;
  CountingIrq irq2_;
  std::shared_ptr<MmioTransport> t2_;
};

TEST_F(MmioStateTest, RunningDeviceContinuesWhereItStopped) {
  init_linux();
  uint32_t scratch = 0x1234abcd;
  t_->write(offset_of(MmioReg::kConfig) + 4, {reinterpret_cast<uint8_t*>(&scratch), 4});
  submit_echo(ring0_, 0, {1, 2, 3});
  wr(MmioReg::kQueueNotify, 0);
  ASSERT_EQ(ring0_.used_idx(), 1);
  dev_->change_config();  // config generation 1, both interrupt bits pending
  const auto blob = save();

  make_target();
  auto s = t2_->restore_state(blob);
  ASSERT_TRUE(s.ok()) << s.error().describe();
  EXPECT_EQ(rd2(MmioReg::kStatus), kStatusLive);
  EXPECT_EQ(t2_->acked_features(), kDriverFeatures);
  EXPECT_EQ(rd2(MmioReg::kInterruptStatus), kIntUsedBuffer | kIntConfigChange);
  EXPECT_EQ(rd2(MmioReg::kConfigGeneration), 1u);
  EXPECT_EQ(irq2_.count, 1);  // the pending interrupt is raised again
  uint32_t read_back = 0;
  t2_->read(offset_of(MmioReg::kConfig) + 4, {reinterpret_cast<uint8_t*>(&read_back), 4});
  EXPECT_EQ(read_back, scratch);
  ASSERT_TRUE(dev2_->active());
  EXPECT_EQ(dev2_->acked_features(), kDriverFeatures);
  wr2(MmioReg::kQueueSel, 0);
  EXPECT_EQ(rd2(MmioReg::kQueueNum), 16u);
  EXPECT_EQ(rd2(MmioReg::kQueueReady), 1u);
  EXPECT_EQ(rd2(MmioReg::kQueueDescLow), static_cast<uint32_t>(kDescAddr));
  EXPECT_EQ(rd2(MmioReg::kQueueDriverLow), static_cast<uint32_t>(kAvailAddr));
  EXPECT_EQ(rd2(MmioReg::kQueueDeviceLow), static_cast<uint32_t>(kUsedAddr));

  // The cursors travelled: the next request lands in used slot 1, not 0.
  submit_echo(ring0_, 2, {9, 8, 7, 6});
  wr2(MmioReg::kQueueNotify, 0);
  EXPECT_EQ(dev2_->served, 1);
  EXPECT_EQ(ring0_.used_idx(), 2);
  EXPECT_EQ(ring0_.used(1).id, 2u);
  EXPECT_EQ(ring0_.bytes(kBufferBase + 0x800, 4), (std::vector<uint8_t>{9, 8, 7, 6}));
  // Registers are frozen after DRIVER_OK, as on the live device (docs/security.md #7).
  wr2(MmioReg::kQueueNum, 8);
  EXPECT_EQ(rd2(MmioReg::kQueueNum), 16u);
}

TEST_F(MmioStateTest, BufferMadeAvailableBeforeTheSnapshotIsServedAfterRestore) {
  init_linux();
  submit_echo(ring0_, 0, {5, 5});  // published, but the notify never reached the device
  const auto blob = save();
  make_target();
  ASSERT_TRUE(t2_->restore_state(blob).ok());
  EXPECT_EQ(dev2_->served, 1);
  EXPECT_EQ(ring0_.used_idx(), 1);
}

TEST_F(MmioStateTest, SaveRestoreSaveIsStableInEveryDriverPhase) {
  // Each phase of the Linux init sequence, saved, restored and saved again, gives the same bytes.
  const std::vector<std::function<void()>> phases = {
      [] {},
      [&] { begin_init(); },
      [&] {
        begin_init();
        write_driver_features(kDriverFeatures);
        add_status(kFeaturesOk);
        setup_queue(0, ring0_);
        wr(MmioReg::kQueueSel, 7);
      },
      [&] { init_linux(); },
      [&] {
        begin_init();
        add_status(kFailed);
      },
  };
  for (size_t i = 0; i < phases.size(); ++i) {
    SCOPED_TRACE("phase " + std::to_string(i));
    wr(MmioReg::kStatus, 0);
    fresh_rings();
    phases[i]();
    const auto blob = save();
    make_target();
    auto s = t2_->restore_state(blob);
    ASSERT_TRUE(s.ok()) << s.error().describe();
    EXPECT_EQ(t2_->status(), t_->status());
    EXPECT_EQ(dev2_->active(), dev_->active());
    auto again = t2_->save_state();
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, blob);
  }
}

TEST_F(MmioStateTest, BrokenDeviceStaysBrokenAndInactive) {
  init_linux();
  ring0_.set_avail_idx(100);  // docs/security.md #4: NEEDS_RESET
  wr(MmioReg::kQueueNotify, 0);
  ASSERT_TRUE(t_->status() & kNeedsReset);
  const auto blob = save();
  make_target();
  ASSERT_TRUE(t2_->restore_state(blob).ok());
  EXPECT_EQ(rd2(MmioReg::kStatus), kStatusLive | kNeedsReset);
  EXPECT_FALSE(dev2_->active());
  // The driver's reset brings it back, as on the live device.
  wr2(MmioReg::kStatus, 0);
  EXPECT_EQ(rd2(MmioReg::kStatus), 0u);
}

TEST_F(MmioStateTest, RestoreIntoAUsedDeviceIsRefused) {
  const auto blob = init_save_and_make_target();
  wr2(MmioReg::kStatus, kAcknowledge);
  EXPECT_FALSE(t2_->restore_state(blob).ok());
}

TEST_F(MmioStateTest, SaveRefusedByTheDeviceFails) {
  init_linux();
  dev_->refuse_save = true;
  EXPECT_FALSE(t_->save_state().ok());
}

// docs/security.md #22: each hostile variant of a valid blob is refused, nothing is applied, and
// the same target then accepts the valid blob.
TEST_F(MmioStateTest, SecurityCheck22_HostileBlobsAreRefusedWithoutHalfActivatingTheDevice) {
  init_linux();
  submit_echo(ring0_, 0, {1});
  wr(MmioReg::kQueueNotify, 0);
  const auto good = save();
  ASSERT_EQ(good.size(), kOffQueue0 + 2 * kQueueBytes + 4 + 4);

  struct Case {
    const char* name;
    std::function<void(std::vector<uint8_t>&)> mutate;
  };
  const Case cases[] = {
      {"empty", [](auto& b) { b.clear(); }},
      {"trailing byte", [](auto& b) { b.push_back(0); }},
      {"other device type", [](auto& b) { poke<uint32_t>(b, 0, 2); }},
      {"queue size 0", [&](auto& b) { poke<uint32_t>(b, q(0, kQNum), 0); }},
      {"queue size not a power of two", [&](auto& b) { poke<uint32_t>(b, q(0, kQNum), 12); }},
      {"queue size above the maximum", [&](auto& b) { poke<uint32_t>(b, q(0, kQNum), 32); }},
      {"queue size beyond 16 bits", [&](auto& b) { poke<uint32_t>(b, q(0, kQNum), 0x10010); }},
      {"descriptor table misaligned",
       [&](auto& b) { poke<uint64_t>(b, q(0, kQDesc), kDescAddr + 8); }},
      {"used ring misaligned", [&](auto& b) { poke<uint64_t>(b, q(0, kQDevice), kUsedAddr + 2); }},
      {"ring in the RAM gap", [&](auto& b) { poke<uint64_t>(b, q(0, kQDesc), 0x300000); }},
      {"ring past the end of RAM", [&](auto& b) { poke<uint64_t>(b, q(1, kQDriver), 6ull << 20); }},
      {"ring at the top of the address space",
       [&](auto& b) { poke<uint64_t>(b, q(0, kQDevice), ~0ull - 0xfff); }},
      {"rings overlap", [&](auto& b) { poke<uint64_t>(b, q(0, kQDriver), kDescAddr); }},
      {"ready is not a boolean", [&](auto& b) { poke<uint8_t>(b, q(0, kQReady), 2); }},
      {"requests in flight", [&](auto& b) { poke<uint16_t>(b, q(0, kQNextAvail), 2); }},
      {"cursors on an idle queue",
       [&](auto& b) {
         poke<uint8_t>(b, q(1, kQReady), 0);
         poke<uint16_t>(b, q(1, kQNextAvail), 3);
         poke<uint16_t>(b, q(1, kQNextUsed), 3);
       }},
      {"features not offered",
       [](auto& b) { poke<uint64_t>(b, kOffDriverFeatures, kDriverFeatures | (1ull << 40)); }},
      {"FEATURES_OK without VERSION_1",
       [](auto& b) { poke<uint64_t>(b, kOffDriverFeatures, kDriverFeatures & ~kFVersion1); }},
      {"DRIVER_OK without FEATURES_OK",
       [](auto& b) { poke<uint32_t>(b, kOffStatus, kAcknowledge | kDriver | kDriverOk); }},
      {"FEATURES_OK without DRIVER",
       [](auto& b) { poke<uint32_t>(b, kOffStatus, kAcknowledge | kFeaturesOk); }},
      {"unknown status bit", [](auto& b) { poke<uint32_t>(b, kOffStatus, kStatusLive | 0x10); }},
      {"NEEDS_RESET before DRIVER_OK",
       [](auto& b) {
         poke<uint32_t>(b, kOffStatus, kAcknowledge);
         poke<uint8_t>(b, kOffNeedsReset, 1);
       }},
      {"unknown interrupt bit", [](auto& b) { poke<uint32_t>(b, kOffIntStatus, 4); }},
      {"queue count too large", [](auto& b) { poke<uint32_t>(b, kOffQueueCount, 0xffffffff); }},
      {"queue count too small", [](auto& b) { poke<uint32_t>(b, kOffQueueCount, 1); }},
      {"device part length past the end",
       [](auto& b) { poke<uint32_t>(b, b.size() - 8, 0x7fffffff); }},
      {"device part refused by the device",
       [](auto& b) {  // 3 bytes where the echo device wants 4
         const size_t len_at = b.size() - 8;
         b.pop_back();
         poke<uint32_t>(b, len_at, 3);
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto bad = good;
    c.mutate(bad);
    make_target();
    auto s = t2_->restore_state(bad);
    ASSERT_FALSE(s.ok());
    expect_target_reset();
    auto ok = t2_->restore_state(good);
    ASSERT_TRUE(ok.ok()) << ok.error().describe();
    EXPECT_TRUE(dev2_->active());
  }
  // Every truncation of a valid blob.
  for (size_t len = 0; len < good.size(); ++len) {
    SCOPED_TRACE("truncated to " + std::to_string(len));
    make_target();
    ASSERT_FALSE(t2_->restore_state({good.data(), len}).ok());
    expect_target_reset();
  }
}

// docs/security.md #22: every single-byte change of a valid blob is either refused (leaving the
// device reset) or gives a device that runs safely (a request on the restored rings, then a
// save of what was restored).
TEST_F(MmioStateTest, SecurityCheck22_EveryByteFlipIsRefusedOrSafe) {
  init_linux();
  submit_echo(ring0_, 0, {1});
  wr(MmioReg::kQueueNotify, 0);
  const auto good = save();
  for (size_t pos = 0; pos < good.size(); ++pos) {
    for (uint8_t x : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      SCOPED_TRACE("byte " + std::to_string(pos) + " ^ " + std::to_string(x));
      auto bad = good;
      bad[pos] ^= x;
      make_target();
      if (!t2_->restore_state(bad).ok()) {
        expect_target_reset();
        continue;
      }
      wr2(MmioReg::kQueueNotify, 0);
      wr2(MmioReg::kQueueNotify, 1);
      EXPECT_TRUE(t2_->save_state().ok() || (t2_->status() & kNeedsReset));
    }
  }
}

TEST_F(MmioStateTest, DeviceRefusingItsPartLeavesTransportAndDeviceReset) {
  const auto blob = init_save_and_make_target();
  dev2_->refuse_restore = true;
  ASSERT_FALSE(t2_->restore_state(blob).ok());
  EXPECT_EQ(t2_->status(), 0u);
  EXPECT_EQ(rd2(MmioReg::kConfigGeneration), 0u);
  EXPECT_FALSE(dev2_->active());
  dev2_->refuse_restore = false;
  ASSERT_TRUE(t2_->restore_state(blob).ok());
  EXPECT_TRUE(dev2_->active());
}

TEST_F(MmioStateTest, DeviceRefusingActivationLeavesTransportReset) {
  const auto blob = init_save_and_make_target();
  dev2_->refuse_activation = true;
  ASSERT_FALSE(t2_->restore_state(blob).ok());
  EXPECT_EQ(t2_->status(), 0u);
  EXPECT_FALSE(dev2_->active());
}

}  // namespace
}  // namespace carapace::virtio
