// virtio-blk end to end through MmioTransport on fake guest memory, every test on both backends
// (synchronous and io_uring): each request type, read-only drives, the configuration space and
// docs/security.md #13, #14 and #15.
#include <gtest/gtest.h>

#include "tests/unit/devices/block/block_fixture.h"
#include "vmm/devices/block/disk_image.h"

namespace carapace::blocktest {
namespace {

constexpr uint64_t kImageSize = 1 << 20;  // 2048 sectors
constexpr uint64_t kSectors = kImageSize / 512;

class BlockBackendTest : public BlockTest, public ::testing::WithParamInterface<BlockBackend> {
 protected:
  void SetUp() override {
    path_ = dir_.file("disk.img");
    write_file(path_, pattern(kImageSize));
  }
  void open(bool read_only = false, const RateLimiter::Config& limit = {}, uint16_t queue_size = 64,
            EventLoop* loop = nullptr, const std::string& serial = "test-serial") {
    auto img = block::open_raw_image(path_, read_only);
    ASSERT_TRUE(img.ok()) << img.error().describe();
    start(std::move(img).value(), GetParam(), limit, queue_size, loop, serial);
    ASSERT_EQ(dev_->using_io_uring(), GetParam() == BlockBackend::kIoUring);
  }
  std::vector<uint8_t> expected(uint64_t offset, size_t len) {
    auto all = pattern(kImageSize);
    return {all.begin() + static_cast<long>(offset), all.begin() + static_cast<long>(offset + len)};
  }
  uint64_t bad_requests() { return t_->errors().bad_request.load(); }

  std::string path_;
};

TEST_P(BlockBackendTest, ReadReturnsTheImageBytes) {
  open();
  ring_->fill(data_addr(0), 0, 4096);
  submit(0, VIRTIO_BLK_T_IN, 3, 4096);
  notify();
  ASSERT_EQ(ring_->used_idx(), 1);
  EXPECT_EQ(status(0), VIRTIO_BLK_S_OK);
  EXPECT_EQ(ring_->used(0).len, 4097u);  // data + status
  EXPECT_EQ(guest_bytes(data_addr(0), 4096), expected(3 * 512, 4096));
  EXPECT_EQ(dev_->counters().read_bytes, 4096u);
  EXPECT_EQ(dev_->counters().requests, 1u);
  EXPECT_GE(irq_.count.load(), 1);
}

TEST_P(BlockBackendTest, ReadScattersOverSeveralBuffersInBothRegions) {
  open();
  // header -> 512 in region 0 -> 1536 in region 1 -> 2048 in region 0 -> status.
  virtio_blk_outhdr hdr{VIRTIO_BLK_T_IN, 0, 100};
  (void)mem_.write_obj(GuestAddress(kHeaderBase), hdr);
  const uint64_t t = kIndirectBase;
  ring_->set_desc_at(t, 0, kHeaderBase, 16, kDescFNext, 1);
  ring_->set_desc_at(t, 1, 0x180000, 512, kDescFNext | kDescFWrite, 2);
  ring_->set_desc_at(t, 2, kBigData + 0x1000, 1536, kDescFNext | kDescFWrite, 3);
  ring_->set_desc_at(t, 3, 0x190000, 2048, kDescFNext | kDescFWrite, 4);
  ring_->set_desc_at(t, 4, kStatusBase, 1, kDescFWrite);
  ring_->set_desc(0, t, 80, kDescFIndirect);
  ring_->publish(0);
  notify();
  ASSERT_EQ(ring_->used_idx(), 1);
  EXPECT_EQ(status(0), VIRTIO_BLK_S_OK);
  auto want = expected(100 * 512, 4096);
  std::vector<uint8_t> got = guest_bytes(0x180000, 512);
  auto b = guest_bytes(kBigData + 0x1000, 1536);
  got.insert(got.end(), b.begin(), b.end());
  b = guest_bytes(0x190000, 2048);
  got.insert(got.end(), b.begin(), b.end());
  EXPECT_EQ(got, want);
}

TEST_P(BlockBackendTest, WriteThenFlushReachesTheFile) {
  open();
  submit(0, VIRTIO_BLK_T_OUT, 8, 8192, kBigData);
  submit(1, VIRTIO_BLK_T_FLUSH, 0, 0);
  (void)mem_.write(GuestAddress(kBigData), std::vector<uint8_t>(8192, 0x5a));
  notify();
  ASSERT_TRUE(wait_used(2));
  EXPECT_EQ(status(0), VIRTIO_BLK_S_OK);
  EXPECT_EQ(status(1), VIRTIO_BLK_S_OK);
  EXPECT_EQ(used_for(0)->len, 1u);
  auto file = read_file(path_);
  ASSERT_EQ(file.size(), kImageSize);
  EXPECT_EQ(std::vector<uint8_t>(file.begin() + 4096, file.begin() + 4096 + 8192),
            std::vector<uint8_t>(8192, 0x5a));
  EXPECT_EQ(file[4095], pattern_byte(4095));
  EXPECT_EQ(file[4096 + 8192], pattern_byte(4096 + 8192));
  auto c = dev_->counters();
  EXPECT_EQ(c.write_bytes, 8192u);
  EXPECT_EQ(c.flushes, 1u);
  EXPECT_EQ(c.errors, 0u);
}

TEST_P(BlockBackendTest, GetIdAnswersTheSerialZeroPadded) {
  open();
  ring_->fill(data_addr(0), 0xff, 20);
  submit(0, VIRTIO_BLK_T_GET_ID, 0, VIRTIO_BLK_ID_BYTES);
  notify();
  ASSERT_EQ(ring_->used_idx(), 1);
  EXPECT_EQ(status(0), VIRTIO_BLK_S_OK);
  std::vector<uint8_t> want(20, 0);
  std::memcpy(want.data(), "test-serial", 11);
  EXPECT_EQ(guest_bytes(data_addr(0), 20), want);
}

TEST_P(BlockBackendTest, GetIdWithTwentyByteSerialHasNoTerminator) {
  open(false, {}, 64, nullptr, "ABCDEFGHIJKLMNOPQRSTUVWXYZ");  // cut to 20
  submit(0, VIRTIO_BLK_T_GET_ID, 0, 24);
  ring_->fill(data_addr(0), 0xff, 24);
  notify();
  EXPECT_EQ(status(0), VIRTIO_BLK_S_OK);
  auto got = guest_bytes(data_addr(0), 24);
  EXPECT_EQ(std::string(got.begin(), got.begin() + 20), "ABCDEFGHIJKLMNOPQRST");
  EXPECT_EQ(got[20], 0xff);  // nothing past the 20 bytes
}

TEST_P(BlockBackendTest, DiscardPunchesAHoleThatReadsZero) {
  open();
  const uint64_t before = allocated_bytes(path_);
  submit_range(0, VIRTIO_BLK_T_DISCARD, 256, 512);  // 256 KiB at 128 KiB
  notify();
  ASSERT_EQ(ring_->used_idx(), 1);
  EXPECT_EQ(status(0), VIRTIO_BLK_S_OK);
  auto file = read_file(path_);
  ASSERT_EQ(file.size(), kImageSize);  // KEEP_SIZE
  EXPECT_EQ(std::vector<uint8_t>(file.begin() + 128 * 1024, file.begin() + 384 * 1024),
            std::vector<uint8_t>(256 * 1024, 0));
  EXPECT_EQ(file[128 * 1024 - 1], pattern_byte(128 * 1024 - 1));
  EXPECT_EQ(file[384 * 1024], pattern_byte(384 * 1024));
  EXPECT_LE(allocated_bytes(path_), before - 256 * 1024);
}

TEST_P(BlockBackendTest, WriteZeroesWithAndWithoutUnmapReadZero) {
  open();
  submit_range(0, VIRTIO_BLK_T_WRITE_ZEROES, 1, 2);  // unaligned: bytes [512, 1536)
  submit_range(1, VIRTIO_BLK_T_WRITE_ZEROES, 64, 64, VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP);
  notify();
  ASSERT_TRUE(wait_used(2));
  EXPECT_EQ(status(0), VIRTIO_BLK_S_OK);
  EXPECT_EQ(status(1), VIRTIO_BLK_S_OK);
  auto file = read_file(path_);
  EXPECT_EQ(std::vector<uint8_t>(file.begin() + 512, file.begin() + 1536),
            std::vector<uint8_t>(1024, 0));
  EXPECT_EQ(file[511], pattern_byte(511));
  EXPECT_EQ(file[1536], pattern_byte(1536));
  EXPECT_EQ(std::vector<uint8_t>(file.begin() + 32768, file.begin() + 65536),
            std::vector<uint8_t>(32768, 0));
}

TEST_P(BlockBackendTest, DiscardAndWriteZeroesFlagsAndLimits) {
  open();
  submit_range(0, VIRTIO_BLK_T_DISCARD, 0, 8, VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP);
  submit_range(1, VIRTIO_BLK_T_WRITE_ZEROES, 0, 8, 0x2);          // unknown flag
  submit_range(2, VIRTIO_BLK_T_DISCARD, kSectors - 1, 2);         // past the end
  submit_range(3, VIRTIO_BLK_T_WRITE_ZEROES, 0, (1u << 17) + 1);  // above the max
  submit(4, VIRTIO_BLK_T_DISCARD, 0, 32);  // two ranges: max_discard_seg is 1
  notify();
  ASSERT_TRUE(wait_used(5));
  expect_statuses({VIRTIO_BLK_S_UNSUPP, VIRTIO_BLK_S_UNSUPP, VIRTIO_BLK_S_IOERR, VIRTIO_BLK_S_IOERR,
                   VIRTIO_BLK_S_IOERR});
  EXPECT_EQ(read_file(path_), pattern(kImageSize));
  EXPECT_EQ(bad_requests(), 5u);
}

TEST_P(BlockBackendTest, ConfigSpaceAndFeatures) {
  open();
  EXPECT_EQ(rd(MmioReg::kDeviceId), 2u);
  EXPECT_EQ(config<uint64_t>(offsetof(virtio_blk_config, capacity)), kSectors);
  EXPECT_EQ(config<uint32_t>(offsetof(virtio_blk_config, seg_max)), 254u);
  EXPECT_EQ(config<uint32_t>(offsetof(virtio_blk_config, max_discard_seg)), 1u);
  EXPECT_EQ(config<uint32_t>(offsetof(virtio_blk_config, max_write_zeroes_seg)), 1u);
  EXPECT_EQ(config<uint8_t>(offsetof(virtio_blk_config, write_zeroes_may_unmap)), 1u);
  EXPECT_TRUE(features_ & (1u << VIRTIO_BLK_F_FLUSH));
  EXPECT_TRUE(features_ & (1u << VIRTIO_BLK_F_SEG_MAX));
  EXPECT_TRUE(features_ & (1u << VIRTIO_BLK_F_DISCARD));
  EXPECT_TRUE(features_ & (1u << VIRTIO_BLK_F_WRITE_ZEROES));
  EXPECT_FALSE(features_ & (1u << VIRTIO_BLK_F_RO));
  // Writes to the configuration space change nothing.
  uint64_t junk = 7;
  t_->write(offset_of(MmioReg::kConfig), {reinterpret_cast<uint8_t*>(&junk), 8});
  EXPECT_EQ(config<uint64_t>(0), kSectors);
}

TEST_P(BlockBackendTest, CapacityIgnoresAPartialLastSector) {
  write_file(path_, pattern(kImageSize + 300));
  open();
  EXPECT_EQ(config<uint64_t>(0), kSectors);
  submit(0, VIRTIO_BLK_T_IN, kSectors, 512);  // the partial tail is not a sector
  notify();
  EXPECT_EQ(status(0), VIRTIO_BLK_S_IOERR);
}

TEST_P(BlockBackendTest, ReadOnlyDriveRefusesWritesAndIsOpenedReadOnly) {
  open(/*read_only=*/true);
  EXPECT_TRUE(features_ & (1u << VIRTIO_BLK_F_RO));
  EXPECT_FALSE(features_ & (1u << VIRTIO_BLK_F_DISCARD));
  EXPECT_EQ(::fcntl(dev_->image().direct_fd(), F_GETFL) & O_ACCMODE, O_RDONLY);
  put_guest_bytes(data_addr(0), std::vector<uint8_t>(4096, 0x77));
  submit(0, VIRTIO_BLK_T_OUT, 0, 4096);
  submit_range(1, VIRTIO_BLK_T_DISCARD, 0, 8);
  submit_range(2, VIRTIO_BLK_T_WRITE_ZEROES, 0, 8);
  submit(3, VIRTIO_BLK_T_IN, 0, 512);
  submit(4, VIRTIO_BLK_T_FLUSH, 0, 0);
  notify();
  ASSERT_TRUE(wait_used(5));
  expect_statuses({VIRTIO_BLK_S_IOERR, VIRTIO_BLK_S_IOERR, VIRTIO_BLK_S_IOERR, VIRTIO_BLK_S_OK,
                   VIRTIO_BLK_S_OK});
  EXPECT_EQ(read_file(path_), pattern(kImageSize));
  auto c = dev_->counters();
  EXPECT_EQ(c.write_bytes, 0u);
  EXPECT_EQ(c.io_errors, 0u);  // guest errors, not host ones
  EXPECT_EQ(c.errors, 3u);
}

TEST_P(BlockBackendTest, SecurityCheck13_HeaderOnlyChainIsReturnedAndQueueGoesOn) {
  open();
  virtio_blk_outhdr hdr{VIRTIO_BLK_T_IN, 0, 0};
  (void)mem_.write_obj(GuestAddress(kHeaderBase + 16 * 5), hdr);
  ring_->set_desc(5, kHeaderBase + 16 * 5, 16);  // header alone, no status
  ring_->publish(5);
  submit(0, VIRTIO_BLK_T_IN, 0, 512);
  notify();
  ASSERT_TRUE(wait_used(2));
  ASSERT_TRUE(used_for(5).has_value());
  EXPECT_EQ(used_for(5)->len, 0u);
  EXPECT_EQ(status(0), VIRTIO_BLK_S_OK);
  EXPECT_EQ(bad_requests(), 1u);
  EXPECT_EQ(rd(MmioReg::kStatus) & kNeedsReset, 0u);
}

TEST_P(BlockBackendTest, SecurityCheck13_ShortHeaderIsIoErr) {
  open();
  ring_->set_desc(0, kHeaderBase, 8, kDescFNext, 1);  // 8 of the 16 header bytes
  ring_->set_desc(1, kStatusBase, 1, kDescFWrite);
  (void)mem_.write_obj(GuestAddress(kStatusBase), kStatusPoison);
  ring_->publish(0);
  notify();
  ASSERT_EQ(ring_->used_idx(), 1);
  EXPECT_EQ(status(0), VIRTIO_BLK_S_IOERR);
}

TEST_P(BlockBackendTest, SecurityCheck14_RangePastCapacityIsIoErrWithoutHostIo) {
  open();
  ring_->fill(kBigData, 0xcc, 8192);
  submit(0, VIRTIO_BLK_T_IN, kSectors, 512, kBigData);              // first sector past the end
  submit(1, VIRTIO_BLK_T_IN, kSectors - 1, 1024, kBigData + 4096);  // straddles the end
  submit(2, VIRTIO_BLK_T_IN, UINT64_MAX / 512 + 1, 512, kBigData);  // sector * 512 overflows
  submit(3, VIRTIO_BLK_T_OUT, UINT64_MAX, 512, kBigData);           // sector + n overflows
  submit(4, VIRTIO_BLK_T_OUT, kSectors - 1, 1024, kBigData);
  submit(5, VIRTIO_BLK_T_IN, 0, 1000, kBigData);  // not a multiple of 512
  submit(6, VIRTIO_BLK_T_OUT, 0, 100, kBigData);
  notify();
  ASSERT_TRUE(wait_used(7));
  for (uint16_t h = 0; h < 7; ++h)
    EXPECT_EQ(status(h), VIRTIO_BLK_S_IOERR) << "head " << h;
  EXPECT_EQ(guest_bytes(kBigData, 8192), std::vector<uint8_t>(8192, 0xcc));  // nothing read
  auto file = read_file(path_);
  EXPECT_EQ(file, pattern(kImageSize));  // nothing written, no growth
  auto c = dev_->counters();
  EXPECT_EQ(c.read_bytes + c.write_bytes, 0u);
  EXPECT_EQ(c.io_errors, 0u);
  EXPECT_EQ(bad_requests(), 7u);
}

TEST_P(BlockBackendTest, SecurityCheck14_LastSectorIsReachable) {
  open();
  submit(0, VIRTIO_BLK_T_IN, kSectors - 1, 512);
  notify();
  EXPECT_EQ(status(0), VIRTIO_BLK_S_OK);
  EXPECT_EQ(guest_bytes(data_addr(0), 512), expected(kImageSize - 512, 512));
}

TEST_P(BlockBackendTest, SecurityCheck14_ShortGetIdBufferIsIoErr) {
  open();
  ring_->fill(data_addr(0), 0xcc, 20);
  submit(0, VIRTIO_BLK_T_GET_ID, 0, 19);
  notify();
  EXPECT_EQ(status(0), VIRTIO_BLK_S_IOERR);
  EXPECT_EQ(guest_bytes(data_addr(0), 20), std::vector<uint8_t>(20, 0xcc));
}

TEST_P(BlockBackendTest, SecurityCheck14_WriteToReadOnlyDiskIsIoErr) {
  open(/*read_only=*/true);
  submit(0, VIRTIO_BLK_T_OUT, 0, 512);
  notify();
  EXPECT_EQ(status(0), VIRTIO_BLK_S_IOERR);
  EXPECT_EQ(read_file(path_), pattern(kImageSize));
}

TEST_P(BlockBackendTest, SecurityCheck15_StatusOfTheWrongDirectionIsDropped) {
  open();
  // header(R) -> data(W) -> status(R): a readable buffer after a writable one; the core refuses
  // the chain and returns it with length 0.
  ring_->set_desc(0, kHeaderBase, 16, kDescFNext, 1);
  ring_->set_desc(1, data_addr(0), 512, kDescFNext | kDescFWrite, 2);
  ring_->set_desc(2, kStatusBase, 1, 0);
  ring_->publish(0);
  // header(R) -> status(R): nothing writable at all; dropped by the device.
  ring_->set_desc(3, kHeaderBase + 16, 16, kDescFNext, 4);
  ring_->set_desc(4, kStatusBase + 3, 1, 0);
  ring_->publish(3);
  submit(6, VIRTIO_BLK_T_IN, 0, 512);  // and the queue goes on
  (void)mem_.write_obj(GuestAddress(kHeaderBase), virtio_blk_outhdr{VIRTIO_BLK_T_IN, 0, 0});
  (void)mem_.write_obj(GuestAddress(kHeaderBase + 16), virtio_blk_outhdr{VIRTIO_BLK_T_IN, 0, 0});
  (void)mem_.write_obj(GuestAddress(kStatusBase + 3), kStatusPoison);
  notify();
  ASSERT_TRUE(wait_used(3));
  EXPECT_EQ(used_for(0)->len, 0u);
  EXPECT_EQ(used_for(3)->len, 0u);
  EXPECT_EQ(status(3), kStatusPoison);  // never written
  EXPECT_EQ(status(6), VIRTIO_BLK_S_OK);
  EXPECT_EQ(rd(MmioReg::kStatus) & kNeedsReset, 0u);
}

TEST_P(BlockBackendTest, SecurityCheck15_ZeroLengthStatusDescriptorIsAnError) {
  open();
  // header(R) -> data(W, 512) -> status(W, 0): the last writable byte is the data's, so the
  // data is 511 bytes: IOERR lands there, and no sector is read.
  (void)mem_.write_obj(GuestAddress(kHeaderBase), virtio_blk_outhdr{VIRTIO_BLK_T_IN, 0, 0});
  ring_->fill(data_addr(0), 0xcc, 512);
  ring_->set_desc(0, kHeaderBase, 16, kDescFNext, 1);
  ring_->set_desc(1, data_addr(0), 512, kDescFNext | kDescFWrite, 2);
  ring_->set_desc(2, kStatusBase, 0, kDescFWrite);
  ring_->publish(0);
  notify();
  ASSERT_EQ(ring_->used_idx(), 1);
  EXPECT_EQ(guest_bytes(data_addr(0), 511), std::vector<uint8_t>(511, 0xcc));
  EXPECT_EQ(guest_bytes(data_addr(0) + 511, 1)[0], VIRTIO_BLK_S_IOERR);
  EXPECT_EQ(dev_->counters().read_bytes, 0u);
}

TEST_P(BlockBackendTest, SecurityCheck15_UnknownTypesAreUnsupported) {
  open();
  const uint32_t types[] = {2 /* SCSI */,
                            10 /* GET_LIFETIME */,
                            14 /* SECURE_ERASE */,
                            0x80000000 /* BARRIER */,
                            0x80000001,
                            0xffffffff};
  uint16_t h = 0;
  for (uint32_t type : types)
    submit(h++, type, 0, 512);
  submit(h, VIRTIO_BLK_T_IN, 0, 512);
  notify();
  ASSERT_TRUE(wait_used(static_cast<uint16_t>(h + 1)));
  for (uint16_t i = 0; i < h; ++i)
    EXPECT_EQ(status(i), VIRTIO_BLK_S_UNSUPP) << "type " << types[i];
  EXPECT_EQ(status(h), VIRTIO_BLK_S_OK);
  EXPECT_EQ(read_file(path_), pattern(kImageSize));
  EXPECT_EQ(dev_->counters().errors, h);
}

TEST_P(BlockBackendTest, ConcurrentRequestsOnTheEventLoopAllComplete) {
  EventLoop* loop = start_loop();
  open(false, {}, 64, loop);
  // 32 reads of 32 KiB each, in shuffled sector order, into region 1.
  auto sector = [](uint16_t h) { return ((h * 7) % 32) * 64ull; };
  for (uint16_t h = 0; h < 32; ++h)
    submit(h, VIRTIO_BLK_T_IN, sector(h), 32768, kBigData + h * 32768ull);
  notify();
  ASSERT_TRUE(wait_used(32));
  for (uint16_t h = 0; h < 32; ++h) {
    EXPECT_EQ(status(h), VIRTIO_BLK_S_OK);
    EXPECT_EQ(guest_bytes(kBigData + h * 32768ull, 32768), expected(sector(h) * 512, 32768))
        << "head " << h;
  }
  EXPECT_EQ(dev_->in_flight(), 0u);
  stop();
}

INSTANTIATE_TEST_SUITE_P(Backends, BlockBackendTest, kBothBackends, backend_name);

}  // namespace
}  // namespace carapace::blocktest
