// virtio-vsock snapshots: host connections do not survive; a restored running device tells the
// guest with VIRTIO_VSOCK_EVENT_TRANSPORT_RESET (virtio 1.2 §5.10.6.6) - at once when the driver
// left an event buffer, else when it gives one - shows the CID of its own configuration, and
// serves new connections on the same rings once the driver has taken the reset. A device part it
// cannot read is refused (docs/security.md #22).
#include <gtest/gtest.h>

#include "tests/unit/devices/vsock/vsock_fixture.h"

namespace carapace::vsock::fake {
namespace {

constexpr uint64_t kCloneCid = 77;

class VsockStateTest : public VsockTest {
 protected:
  // Saves the running device, then builds a clone (own CID and socket) and restores into it,
  // with the queues rebuilt from the snapshot as the transport would. The fake guest drives
  // the clone from then on; the old device is gone (its host sockets with it).
  Status save_and_restore(const VsockOptions& clone_opts = {}) {
    auto snap = dev_->save();
    if (!snap.ok()) return snap.take_error();
    EXPECT_EQ(snap->queues.size(), 3u);
    auto clone = VirtioVsock::create(kCloneCid, dir_ + "/clone.sock", *loop_, clone_opts);
    if (!clone.ok()) return clone.take_error();
    virtio::ActivationContext ctx;
    ctx.memory = &mem_;
    ctx.acked_features = virtio::kFVersion1;
    ctx.signals = &guest_.signals;
    ctx.errors = &guest_.errors;
    for (const auto& q : snap->queues) {
      auto built = virtio::Queue::activate(mem_, q, 256);
      if (!built.ok()) return built.take_error();
      ctx.queues.push_back(std::move(built).value());
    }
    auto s = (*clone)->restore(snap->device, std::move(ctx));
    if (!s.ok()) return s;
    dev_ = *clone;
    path_ = dir_ + "/clone.sock";
    guest_.attach(*dev_);
    return {};
  }
  uint64_t cid() {
    uint64_t v = 0;
    dev_->read_config(0, {reinterpret_cast<uint8_t*>(&v), 8});
    return v;
  }
};

TEST_F(VsockStateTest, RestoreResetsTheTransportAndServesNewConnections) {
  start();
  HostConn old = open_from_host(1000);
  ASSERT_EQ(dev_->stats().connections, 1u);
  ASSERT_TRUE(guest_.events().empty());

  auto s = save_and_restore();
  ASSERT_TRUE(s.ok()) << s.error().describe();
  EXPECT_EQ(guest_.events(), std::vector<uint32_t>{kEventTransportReset});
  EXPECT_EQ(dev_->stats().events_posted, 1u);
  EXPECT_EQ(dev_->stats().connections, 0u);
  EXPECT_EQ(cid(), kCloneCid);
  // The old VM's host socket went with it.
  EXPECT_TRUE(sees_eof(old.fd.get()));

  // The guest takes the reset as Linux does (reads CID 77, gives the event buffer back), then
  // accepts a connection on the clone's socket; data flows.
  guest_.set_cid(kCloneCid);
  guest_.refill_events();
  HostConn c = open_from_host(2000);
  guest_write(c, "after restore");
  EXPECT_EQ(read_some(c.fd.get(), 64), "after restore");
}

TEST_F(VsockStateTest, ResetWaitsForAnEventBufferWhenTheDriverLeftNone) {
  start();
  for (uint16_t i = 0; i < kEventBuffers; ++i)  // use up every event buffer
    dev_->send_transport_reset();
  ASSERT_EQ(guest_.events().size(), kEventBuffers);
  auto s = save_and_restore();
  ASSERT_TRUE(s.ok()) << s.error().describe();
  EXPECT_TRUE(guest_.events().empty());
  guest_.refill_events();
  EXPECT_EQ(guest_.events(), std::vector<uint32_t>{kEventTransportReset});
}

// Linux takes the event queue and the rx queue in separate work items, in either order: a
// REQUEST read before the reset would be answered with the snapshot's CID (and refused), or
// accepted and then dropped by the reset. So a host CONNECT waits until the driver gives the
// event buffer back, which it does only after taking the event.
TEST_F(VsockStateTest, HostRequestWaitsUntilTheDriverTookTheReset) {
  start();
  auto s = save_and_restore();
  ASSERT_TRUE(s.ok()) << s.error().describe();
  ASSERT_EQ(guest_.events(), std::vector<uint32_t>{kEventTransportReset});
  UniqueFd host = unix_connect(path_);
  ASSERT_TRUE(host.valid());
  send_all(host.get(), "CONNECT 3000\n");
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(no_packet()) << "a REQUEST went out before the guest took the reset";
    ::usleep(1000);
  }
  guest_.set_cid(kCloneCid);
  guest_.refill_events();
  Packet req = expect_packet();
  EXPECT_EQ(req.hdr.op, kOpRequest);
  EXPECT_EQ(req.hdr.dst_cid, kCloneCid);
  EXPECT_EQ(req.hdr.dst_port, 3000u);
  guest_.send(guest_.hdr(kOpResponse, 3000, req.hdr.src_port));
  EXPECT_EQ(read_some(host.get(), 64), "OK " + std::to_string(req.hdr.src_port) + "\n");
}

// A driver that never gives the buffer back is served after reset_ack_timeout_ns, as before.
TEST_F(VsockStateTest, HeldRequestGoesOutWhenTheDriverKeepsTheEventBuffer) {
  start();
  VsockOptions opts;
  opts.reset_ack_timeout_ns = 50'000'000;
  auto s = save_and_restore(opts);
  ASSERT_TRUE(s.ok()) << s.error().describe();
  UniqueFd host = unix_connect(path_);
  ASSERT_TRUE(host.valid());
  send_all(host.get(), "CONNECT 3001\n");
  EXPECT_TRUE(no_packet());
  dev_->expire_deadlines(VirtioVsock::now_ns() + opts.reset_ack_timeout_ns);
  Packet req = expect_packet();
  EXPECT_EQ(req.hdr.op, kOpRequest);
  EXPECT_EQ(req.hdr.dst_port, 3001u);
  EXPECT_EQ(dev_->stats().connections, 1u);  // the connection itself has not timed out
}

TEST_F(VsockStateTest, NotRunningDeviceSendsNothing) {
  make_device();
  auto snap = dev_->save();
  ASSERT_TRUE(snap.ok());
  EXPECT_TRUE(snap->queues.empty());
  auto clone = VirtioVsock::create(kCloneCid, dir_ + "/clone.sock", *loop_);
  ASSERT_TRUE(clone.ok());
  ASSERT_TRUE((*clone)->restore(snap->device, std::nullopt).ok());
  EXPECT_EQ((*clone)->stats().events_posted, 0u);
}

TEST_F(VsockStateTest, SecurityCheck22_BadDevicePartIsRefused) {
  make_device();
  auto snap = dev_->save();
  ASSERT_TRUE(snap.ok());
  auto clone = VirtioVsock::create(kCloneCid, dir_ + "/clone.sock", *loop_);
  ASSERT_TRUE(clone.ok());
  std::vector<uint8_t> version2 = snap->device;
  version2[0] = 2;
  EXPECT_FALSE((*clone)->restore(version2, std::nullopt).ok());
  std::vector<uint8_t> truncated(snap->device.begin(), snap->device.end() - 1);
  EXPECT_FALSE((*clone)->restore(truncated, std::nullopt).ok());
  std::vector<uint8_t> longer(snap->device.size() + 1, 0);
  std::copy(snap->device.begin(), snap->device.end(), longer.begin());
  EXPECT_FALSE((*clone)->restore(longer, std::nullopt).ok());
}

}  // namespace
}  // namespace carapace::vsock::fake
