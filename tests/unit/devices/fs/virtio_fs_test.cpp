// The virtio-fs device over its two queues: requests on the request queue, FORGET on hiprio,
// the config space, reset back to before INIT, a corrupt ring NEEDS_RESET; unbound devices,
// binding, and snapshots only without a live session (docs/security.md #61, #62).
#include "vmm/devices/fs/virtio_fs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fuse.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/unit/virtio/test_ring.h"

namespace carapace {
namespace {

using namespace virtio;
using namespace virtio::fake;

class Signals : public DeviceSignals {
 public:
  void signal_used(uint16_t q) override { used[q]++; }
  void signal_config_change() override {}
  void report_needs_reset(const Error&) override { ++needs_reset; }
  int used[2] = {0, 0};
  int needs_reset = 0;
};

class VirtioFsTest : public ::testing::Test {
 protected:
  VirtioFsTest() {
    char tmpl[] = "/tmp/carapace-vfs-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  ~VirtioFsTest() override {
    dev_.reset();
    (void)!std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  // `bound`: with the test's folder; otherwise an unbound device.
  void start(bool bound = true) {
    FsDeviceConfig c;
    c.tag = "workspace";
    if (bound) c.shared_dir = dir_;
    c.mode = FsMode::kReadWrite;
    auto d = VirtioFs::create(c);
    ASSERT_TRUE(d.ok()) << d.error().describe();
    dev_ = *d;
    ASSERT_TRUE(dev_->activate(context()).ok());
  }
  ActivationContext context() {
    ActivationContext ctx;
    ctx.memory = &mem_;
    ctx.queues.push_back(hiprio_.activate());
    ctx.queues.push_back(request_.activate());
    ctx.signals = &signals_;
    ctx.errors = &errors_;
    return ctx;
  }
  // INIT on the request queue as head `head`; the reply's error.
  int32_t init(uint16_t head) {
    fuse_init_in in{};
    in.major = 7;
    in.minor = 31;
    submit(request_, head, request(FUSE_INIT, 0, in), 4096);
    dev_->queue_notify(1);
    return reply_header(head).error;
  }
  // One request on `ring` as head `head`: readable bytes, then `reply` writable bytes.
  void submit(TestRing& ring, uint16_t head, const std::vector<uint8_t>& req, uint32_t reply) {
    const uint64_t at = 0x100000 + 0x1000ull * head, out = 0x400000 + 0x1000ull * head;
    (void)mem_.write(GuestAddress(at), req);
    ring.set_desc(static_cast<uint16_t>(2 * head), at, static_cast<uint32_t>(req.size()),
                  reply > 0 ? kDescFNext : 0, static_cast<uint16_t>(2 * head + 1));
    if (reply > 0) ring.set_desc(static_cast<uint16_t>(2 * head + 1), out, reply, kDescFWrite);
    ring.publish(static_cast<uint16_t>(2 * head));
  }
  template <typename T>
  static std::vector<uint8_t> request(uint32_t opcode, uint64_t nodeid, const T& args) {
    fuse_in_header h{};
    h.len = sizeof h + sizeof args;
    h.opcode = opcode;
    h.unique = 7;
    h.nodeid = nodeid;
    std::vector<uint8_t> v(sizeof h + sizeof args);
    std::memcpy(v.data(), &h, sizeof h);
    std::memcpy(v.data() + sizeof h, &args, sizeof args);
    return v;
  }
  fuse_out_header reply_header(uint16_t head) {
    return *mem_.read_obj<fuse_out_header>(GuestAddress(0x400000 + 0x1000ull * head));
  }

  GuestMemory mem_ = make_memory();
  TestRing hiprio_{mem_, 16, 0x10000, 0x20000, 0x30000};
  TestRing request_{mem_, 16, 0x12000, 0x22000, 0x32000};
  Signals signals_;
  GuestErrorCounters errors_;
  std::shared_ptr<VirtioFs> dev_;
  std::string dir_;
};

TEST_F(VirtioFsTest, ConfigSpaceHoldsTheTagAndOneRequestQueue) {
  start();
  EXPECT_EQ(dev_->device_type(), 26u);
  EXPECT_EQ(dev_->queue_max_sizes().size(), 2u);
  EXPECT_EQ(dev_->device_features(), 0u);
  uint8_t cfg[40] = {};
  dev_->read_config(0, cfg);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(cfg)), "workspace");
  uint32_t n = 0;
  std::memcpy(&n, cfg + 36, 4);
  EXPECT_EQ(n, 1u);
  FsDeviceConfig bad;
  bad.shared_dir = dir_;
  bad.tag = std::string(37, 't');
  EXPECT_FALSE(VirtioFs::create(bad).ok());
  bad.tag = "";
  EXPECT_FALSE(VirtioFs::create(bad).ok());
  bad.tag = "new\nline";
  EXPECT_FALSE(VirtioFs::create(bad).ok());
  bad.tag = "ok";
  bad.shared_dir = dir_ + "/missing";
  EXPECT_FALSE(VirtioFs::create(bad).ok());
}

TEST_F(VirtioFsTest, RequestsAndForgetsOverTheQueues) {
  start();
  fuse_init_in init{};
  init.major = 7;
  init.minor = 31;
  submit(request_, 0, request(FUSE_INIT, 0, init), 4096);
  fuse_getattr_in ga{};
  submit(request_, 1, request(FUSE_GETATTR, FUSE_ROOT_ID, ga), 4096);
  submit(request_, 2, request(FUSE_GETATTR, FUSE_ROOT_ID, ga), 8);  // no room: used 0
  dev_->queue_notify(1);
  ASSERT_EQ(request_.used_idx(), 3);
  EXPECT_EQ(request_.used(0).len, sizeof(fuse_out_header) + sizeof(fuse_init_out));
  EXPECT_EQ(reply_header(0).error, 0);
  EXPECT_EQ(request_.used(1).len, sizeof(fuse_out_header) + sizeof(fuse_attr_out));
  EXPECT_EQ(request_.used(2).len, 0u);
  EXPECT_GT(errors_.bad_request.load(), 0u);
  EXPECT_EQ(signals_.used[1], 1);

  fuse_forget_in f{};
  f.nlookup = 1;
  submit(hiprio_, 0, request(FUSE_FORGET, 5, f), 0);
  dev_->queue_notify(0);
  ASSERT_EQ(hiprio_.used_idx(), 1);
  EXPECT_EQ(hiprio_.used(0).len, 0u);
  dev_->queue_notify(7);  // no such queue: ignored

  // A reset drops the queues and the FUSE session; the counters stay.
  dev_->reset();
  EXPECT_EQ(dev_->counters().requests, 4u);
}

TEST_F(VirtioFsTest, SecurityCheck4_ACorruptRingNeedsReset) {
  start();
  request_.set_avail_idx(100);  // more than the queue size ahead (docs/security.md #4)
  dev_->queue_notify(1);
  EXPECT_EQ(signals_.needs_reset, 1);
  dev_->queue_notify(1);
  EXPECT_EQ(signals_.needs_reset, 1);  // stopped until reset
}

// An unbound device answers everything with ENOTCONN (FORGET with nothing) until a folder is
// bound; then INIT starts a session as on any device.
TEST_F(VirtioFsTest, AnUnboundDeviceRefusesUntilBound) {
  start(/*bound=*/false);
  EXPECT_EQ(dev_->binding().shared_dir, "");
  EXPECT_EQ(init(0), -ENOTCONN);
  EXPECT_EQ(request_.used(0).len, sizeof(fuse_out_header));
  fuse_forget_in f{};
  f.nlookup = 1;
  submit(hiprio_, 0, request(FUSE_FORGET, 5, f), 0);
  dev_->queue_notify(0);
  ASSERT_EQ(hiprio_.used_idx(), 1);
  EXPECT_EQ(hiprio_.used(0).len, 0u);
  EXPECT_EQ(dev_->counters().requests, 2u);
  EXPECT_EQ(dev_->counters().errors, 1u);

  ASSERT_TRUE(dev_->bind(dir_, FsMode::kReadOnly).ok());
  const VirtioFs::Binding b = dev_->binding();
  EXPECT_EQ(b.tag, "workspace");
  EXPECT_EQ(b.shared_dir, dir_);
  EXPECT_EQ(b.mode, FsMode::kReadOnly);
  EXPECT_FALSE(b.session);
  EXPECT_EQ(init(1), 0);
  EXPECT_TRUE(dev_->binding().session);
  EXPECT_EQ(dev_->counters().requests, 3u);  // counted across the bind
}

// docs/security.md #62: a folder that does not open as a directory is refused and the device
// keeps what it had; a live session refuses any rebind (EBUSY), a reset ends it.
TEST_F(VirtioFsTest, SecurityCheck62_BadBindsChangeNothing) {
  start();
  const std::string file = dir_ + "/plain";
  ASSERT_EQ(::close(::open(file.c_str(), O_CREAT | O_WRONLY, 0600)), 0);
  ASSERT_EQ(::symlink(dir_.c_str(), (dir_ + "/link").c_str()), 0);
  for (const std::string& bad : {file, dir_ + "/missing", dir_ + "/link", std::string()}) {
    SCOPED_TRACE(bad);
    Status s = dev_->bind(bad, FsMode::kReadWrite);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().kind, ErrorKind::kInvalidInput);
    EXPECT_EQ(dev_->binding().shared_dir, dir_);
  }
  EXPECT_EQ(init(0), 0);
  Status busy = dev_->bind(dir_, FsMode::kReadOnly);
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().sys_errno, EBUSY);
  EXPECT_EQ(dev_->binding().mode, FsMode::kReadWrite);
  dev_->reset();
  EXPECT_TRUE(dev_->bind(dir_, FsMode::kReadOnly).ok());
}

// docs/security.md #61: no snapshot while the guest has a session (its node ids and handles are
// host fds); before INIT and after DESTROY the device saves its tag and restores onto a device
// of the same tag, bound or not.
TEST_F(VirtioFsTest, SecurityCheck61_SnapshotsOnlyWithoutALiveSession) {
  start();
  auto before = dev_->save();
  ASSERT_TRUE(before.ok()) << before.error().describe();
  EXPECT_EQ(before->queues.size(), 2u);
  EXPECT_EQ(init(0), 0);
  auto live = dev_->save();
  ASSERT_FALSE(live.ok());
  EXPECT_NE(live.error().message.find("mounted"), std::string::npos) << live.error().message;
  EXPECT_EQ(live.error().message.find('\n'), std::string::npos);
  // DESTROY takes no arguments: the bare header.
  fuse_in_header h{};
  h.len = sizeof h;
  h.opcode = FUSE_DESTROY;
  h.unique = 9;
  std::vector<uint8_t> destroy(sizeof h);
  std::memcpy(destroy.data(), &h, sizeof h);
  submit(request_, 2, destroy, 4096);
  dev_->queue_notify(1);
  EXPECT_EQ(reply_header(2).error, 0);
  auto after = dev_->save();
  ASSERT_TRUE(after.ok()) << after.error().describe();

  FsDeviceConfig same;
  same.tag = "workspace";  // unbound this time
  auto restored = VirtioFs::create(same);
  ASSERT_TRUE(restored.ok());
  EXPECT_TRUE((*restored)->restore(after->device, std::nullopt).ok());
  EXPECT_TRUE((*restored)->restore(after->device, context()).ok());
}

// docs/security.md #63: a saved part that is not this device's -- another tag, another version,
// truncated, trailing bytes, a tag longer than the config space -- is refused as bad input.
TEST_F(VirtioFsTest, SecurityCheck63_ARestoreMustMatchTheSnapshotsDevice) {
  start();
  auto saved = dev_->save();
  ASSERT_TRUE(saved.ok());
  const std::vector<uint8_t>& part = saved->device;
  FsDeviceConfig other;
  other.tag = "other";
  auto wrong = VirtioFs::create(other);
  ASSERT_TRUE(wrong.ok());
  Status s = (*wrong)->restore(part, std::nullopt);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(s.error().message.find("another tag"), std::string::npos) << s.error().message;
  auto refused = [this](std::vector<uint8_t> bytes) {
    Status r = dev_->restore(bytes, std::nullopt);
    return !r.ok() && r.error().kind == ErrorKind::kInvalidInput;
  };
  EXPECT_TRUE(refused(std::vector<uint8_t>(part.begin(), part.end() - 1)));
  std::vector<uint8_t> longer = part;
  longer.push_back(0);
  EXPECT_TRUE(refused(longer));
  std::vector<uint8_t> version = part;
  version[0] = 2;
  EXPECT_TRUE(refused(version));
  std::vector<uint8_t> huge = {1, 0, 0, 0, 37, 0, 0, 0};  // a 37-byte tag
  huge.resize(huge.size() + 37, 'x');
  EXPECT_TRUE(refused(huge));
  EXPECT_TRUE(refused({}));
  EXPECT_TRUE(dev_->restore(part, std::nullopt).ok());
}

}  // namespace
}  // namespace carapace
