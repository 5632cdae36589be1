// MmioTransport driven the way Linux's virtio_mmio driver drives it, plus the register-level
// abuse of docs/security.md #6-#11 and the NEEDS_RESET path. The device is the test-only echo
// device; rings are built by hand in fake guest memory.
#include "vmm/virtio/mmio_transport.h"

#include <gtest/gtest.h>

#include "common/base/log.h"
#include "tests/unit/virtio/mmio_driver.h"

namespace carapace::virtio {
namespace {

using namespace fake;

using MmioTransportTest = MmioDriverTest;

TEST_F(MmioTransportTest, IdentityRegisters) {
  EXPECT_EQ(rd(MmioReg::kMagicValue), 0x74726976u);
  EXPECT_EQ(rd(MmioReg::kVersion), 2u);
  EXPECT_EQ(rd(MmioReg::kDeviceId), EchoDevice::kType);
  EXPECT_EQ(rd(MmioReg::kVendorId), kMmioVendorId);
  // No shared memory regions: length and base read as all ones (virtio 1.2 §4.2.2).
  wr(MmioReg::kShmSel, 0);
  EXPECT_EQ(rd(MmioReg::kShmLenLow), 0xffffffffu);
  EXPECT_EQ(rd(MmioReg::kShmLenHigh), 0xffffffffu);
  EXPECT_EQ(rd(MmioReg::kShmBaseLow), 0xffffffffu);
  EXPECT_EQ(rd(MmioReg::kShmBaseHigh), 0xffffffffu);
  EXPECT_EQ(rd(MmioReg::kQueueReset), 0u);
  EXPECT_EQ(rd(MmioReg::kStatus), 0u);
  // Offered features: the device's, plus what the core implements.
  wr(MmioReg::kDeviceFeaturesSel, 0);
  const uint64_t lo = rd(MmioReg::kDeviceFeatures);
  wr(MmioReg::kDeviceFeaturesSel, 1);
  const uint64_t hi = rd(MmioReg::kDeviceFeatures);
  EXPECT_EQ(lo | hi << 32, EchoDevice::kFeatureUpper | kFVersion1 | kFIndirectDesc | kFEventIdx);
  wr(MmioReg::kDeviceFeaturesSel, 2);
  EXPECT_EQ(rd(MmioReg::kDeviceFeatures), 0u);
}

TEST_F(MmioTransportTest, LinuxInitSequenceThenOneRequest) {
  set_log_level(LogLevel::kInfo);
  ::testing::internal::CaptureStderr();
  init_linux();
  const std::string log = ::testing::internal::GetCapturedStderr();
  set_log_level(LogLevel::kWarn);
  EXPECT_NE(log.find("virtio-mmio@0xd0000000: virtio DRIVER_OK features 0x"), std::string::npos)
      << log;
  EXPECT_EQ(rd(MmioReg::kStatus), kStatusLive);
  ASSERT_TRUE(dev_->active());
  EXPECT_EQ(dev_->acked_features(), kDriverFeatures);
  EXPECT_EQ(t_->acked_features(), kDriverFeatures);

  submit_echo(ring0_, 0, {1, 2, 3, 4});
  wr(MmioReg::kQueueNotify, 0);
  EXPECT_EQ(dev_->served, 1);
  EXPECT_EQ(ring0_.used_idx(), 1);
  EXPECT_EQ(ring0_.used(0).len, 4u);
  EXPECT_EQ(ring0_.bytes(kBufferBase + 0x800, 4), (std::vector<uint8_t>{1, 2, 3, 4}));
  EXPECT_EQ(rd(MmioReg::kInterruptStatus), kIntUsedBuffer);
  EXPECT_EQ(irq_.count, 1);
  wr(MmioReg::kInterruptAck, kIntUsedBuffer);
  EXPECT_EQ(rd(MmioReg::kInterruptStatus), 0u);
}

TEST_F(MmioTransportTest, QueueLeftUnreadyIsNotReadyInTheDevice) {
  init_linux(kDriverFeatures, /*queues=*/1);
  ASSERT_TRUE(dev_->active());
  wr(MmioReg::kQueueSel, 1);
  EXPECT_EQ(rd(MmioReg::kQueueReady), 0u);
  wr(MmioReg::kQueueNotify, 1);  // docs/security.md #11
  EXPECT_EQ(dev_->notifies, 0);
}

TEST_F(MmioTransportTest, FeaturesOkRefusedWithoutVersion1) {
  begin_init();
  write_driver_features(EchoDevice::kFeatureUpper);
  add_status(kFeaturesOk);
  EXPECT_EQ(rd(MmioReg::kStatus), kAcknowledge | kDriver);  // driver re-reads: not accepted
  EXPECT_EQ(t_->errors().refused_features, 1u);
  add_status(kFeaturesOk | kDriverOk);  // DRIVER_OK cannot skip FEATURES_OK
  EXPECT_EQ(rd(MmioReg::kStatus), kAcknowledge | kDriver);
  EXPECT_FALSE(dev_->active());
}

TEST_F(MmioTransportTest, FeaturesOkRefusedForFeaturesNotOffered) {
  begin_init();
  write_driver_features(kFVersion1 | (1ull << 40));
  add_status(kFeaturesOk);
  EXPECT_EQ(rd(MmioReg::kStatus), kAcknowledge | kDriver);
  // The driver may retry with a valid subset.
  write_driver_features(kFVersion1);
  add_status(kFeaturesOk);
  EXPECT_EQ(rd(MmioReg::kStatus), kAcknowledge | kDriver | kFeaturesOk);
}

TEST_F(MmioTransportTest, DriverFeaturesFrozenAfterFeaturesOk) {
  begin_init();
  write_driver_features(kFVersion1);
  add_status(kFeaturesOk);
  write_driver_features(kFVersion1 | kFEventIdx);
  EXPECT_EQ(t_->acked_features(), kFVersion1);
}

TEST_F(MmioTransportTest, StatusStateMachineRefusesSkippedOrClearedBits) {
  wr(MmioReg::kStatus, kDriver);  // DRIVER before ACKNOWLEDGE
  EXPECT_EQ(rd(MmioReg::kStatus), 0u);
  wr(MmioReg::kStatus, kAcknowledge);
  wr(MmioReg::kStatus, kAcknowledge | 0x10);  // unknown bit
  EXPECT_EQ(rd(MmioReg::kStatus), kAcknowledge);
  wr(MmioReg::kStatus, kAcknowledge | kDriver);
  wr(MmioReg::kStatus, kDriver);  // clears ACKNOWLEDGE
  EXPECT_EQ(rd(MmioReg::kStatus), kAcknowledge | kDriver);
  wr(MmioReg::kStatus, kAcknowledge | kDriver | kFailed);  // the driver gives up
  EXPECT_EQ(rd(MmioReg::kStatus), kAcknowledge | kDriver | kFailed);
  add_status(kFeaturesOk);  // nothing more until a reset
  EXPECT_EQ(rd(MmioReg::kStatus), kAcknowledge | kDriver | kFailed);
  EXPECT_GE(t_->errors().bad_status_write, 3u);
  wr(MmioReg::kStatus, 0);
  EXPECT_EQ(rd(MmioReg::kStatus), 0u);
}

TEST_F(MmioTransportTest, ResetClearsEverything) {
  init_linux();
  submit_echo(ring0_, 0, {9});
  wr(MmioReg::kQueueNotify, 0);
  ASSERT_EQ(rd(MmioReg::kInterruptStatus), kIntUsedBuffer);
  wr(MmioReg::kStatus, 0);
  EXPECT_EQ(rd(MmioReg::kStatus), 0u);
  EXPECT_FALSE(dev_->active());
  EXPECT_GE(dev_->resets, 1);
  EXPECT_EQ(rd(MmioReg::kInterruptStatus), 0u);
  EXPECT_EQ(t_->acked_features(), 0u);
  for (uint32_t q = 0; q < 2; ++q) {
    wr(MmioReg::kQueueSel, q);
    EXPECT_EQ(rd(MmioReg::kQueueReady), 0u);
    EXPECT_EQ(rd(MmioReg::kQueueNum), 0u);
    EXPECT_EQ(rd(MmioReg::kQueueDescLow), 0u);
    EXPECT_EQ(rd(MmioReg::kQueueDeviceLow), 0u);
  }
  // Notifies after reset go nowhere; a fresh init works and starts from a clean ring.
  wr(MmioReg::kQueueNotify, 0);
  EXPECT_EQ(dev_->notifies, 1);
  fresh_rings();
  init_linux();
  EXPECT_EQ(dev_->activations, 2);
  submit_echo(ring0_, 0, {7});
  wr(MmioReg::kQueueNotify, 0);
  EXPECT_EQ(ring0_.used_idx(), 1);
}

TEST_F(MmioTransportTest, BrokenQueueSetsNeedsResetWithConfigInterrupt) {
  init_linux();
  ring0_.set_avail_idx(17);  // 17 ahead of a 16-entry queue (docs/security.md #4)
  wr(MmioReg::kQueueNotify, 0);
  EXPECT_EQ(rd(MmioReg::kStatus), kStatusLive | kNeedsReset);
  EXPECT_EQ(rd(MmioReg::kInterruptStatus) & kIntConfigChange, kIntConfigChange);
  EXPECT_EQ(irq_.count, 1);
  EXPECT_EQ(t_->errors().needs_reset, 1u);
  EXPECT_EQ(ring0_.used_idx(), 0);
  // Further notifies are ignored until the driver resets the device.
  const int notifies = dev_->notifies;
  wr(MmioReg::kQueueNotify, 0);
  EXPECT_EQ(dev_->notifies, notifies);
  // Linux-style status writes carry NEEDS_RESET back; harmless.
  wr(MmioReg::kStatus, kStatusLive | kNeedsReset);
  wr(MmioReg::kStatus, 0);
  EXPECT_EQ(rd(MmioReg::kStatus), 0u);
  fresh_rings();
  init_linux();
  submit_echo(ring0_, 0, {1});
  wr(MmioReg::kQueueNotify, 0);
  EXPECT_EQ(ring0_.used_idx(), 1);
}

TEST_F(MmioTransportTest, ActivationRefusedSetsNeedsReset) {
  dev_->refuse_activation = true;
  init_linux();
  EXPECT_EQ(rd(MmioReg::kStatus), kStatusLive | kNeedsReset);
  EXPECT_EQ(rd(MmioReg::kInterruptStatus), kIntConfigChange);
  wr(MmioReg::kQueueNotify, 0);
  EXPECT_EQ(dev_->notifies, 0);
}

TEST_F(MmioTransportTest, ConfigChangeBumpsGeneration) {
  init_linux();
  const uint32_t gen = rd(MmioReg::kConfigGeneration);
  dev_->change_config();
  EXPECT_EQ(rd(MmioReg::kConfigGeneration), gen + 1);
  EXPECT_EQ(rd(MmioReg::kInterruptStatus), kIntConfigChange);
  EXPECT_EQ(irq_.count, 1);
}

}  // namespace
}  // namespace carapace::virtio
