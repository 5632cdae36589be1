// blk: every virtio-blk device (virtio 1.2 §5.2), in --drive order. The host test fills each image
// with the pattern blk_image_word(offset) (see README.md); the guest checks reads against it.
//   - capacity from the configuration space; 64 KiB from sector 0 as 8 requests in flight at once;
//     the last sector; 4 sectors through a request with 3 data descriptors;
//   - reads at and across the end of the disk fail with IOERR; an unknown type gets UNSUPP;
//   - GET_ID returns the serial (compared with testguest.blk.serial=, if given);
//   - writable disk: 32 KiB of blk_written_word(offset) at capacity/2, read back, FLUSH;
//   - read-only disk (VIRTIO_BLK_F_RO offered): the same write fails with IOERR and the data is
//     unchanged.
// The host test then checks the image files.
#include "guest/testguest/virtio/blk.h"
#include "guest/testguest/cmdline.h"
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenario.h"
#include "guest/testguest/text.h"
#include "guest/testguest/virtio/dma.h"

namespace testguest {
namespace {

using namespace virtio;

constexpr uint64_t kTimeout = kDeviceTimeout;
constexpr uint32_t kChunk = 8192;
constexpr uint32_t kReadChunks = 8;
constexpr uint32_t kWriteBytes = 32768;

// The two patterns, one 64-bit word per 8 bytes of the image (host side: virtio_blk_test.cpp).
uint64_t blk_image_word(uint64_t offset) {
  return 0xb10c000000000000ull | (offset >> 3);
}
uint64_t blk_written_word(uint64_t offset) {
  return 0xfeed000000000000ull | (offset >> 3);
}

void fill(void* buf, uint64_t offset, uint32_t len, uint64_t (*word)(uint64_t)) {
  auto* w = static_cast<uint64_t*>(buf);
  for (uint32_t i = 0; i < len / 8; ++i)
    w[i] = word(offset + 8 * uint64_t{i});
}

// Offset of the first word that differs, or ~0.
uint64_t mismatch(const void* buf, uint64_t offset, uint32_t len, uint64_t (*word)(uint64_t)) {
  const auto* w = static_cast<const uint64_t*>(buf);
  for (uint32_t i = 0; i < len / 8; ++i) {
    if (w[i] != word(offset + 8 * uint64_t{i})) return offset + 8 * uint64_t{i};
  }
  return ~0ull;
}

struct Ctx {
  BlkDriver& blk;
  uint8_t* buf;
  int index;
};

const char* verify(const Ctx& c, uint64_t sector, uint32_t len, uint64_t (*word)(uint64_t),
                   const char* what) {
  const uint64_t at = mismatch(c.buf, sector * kSector, len, word);
  if (at == ~0ull) return nullptr;
  out << "testguest: blk" << dec(c.index) << " " << what << ": word at byte " << hex(at) << " is "
      << hex(*reinterpret_cast<uint64_t*>(c.buf + (at - sector * kSector))) << "\n";
  return "data read does not match the image";
}

const char* read_start(const Ctx& c) {
  // Eight requests in flight at once; they may complete in any order.
  for (uint32_t i = 0; i < kReadChunks; ++i) {
    if (c.blk.start(kBlkIn, i * kChunk / kSector, c.buf + i * kChunk, kChunk) < 0)
      return "queue full";
  }
  c.blk.kick();
  for (uint32_t done = 0; done < kReadChunks; ++done) {
    int tag;
    uint8_t status;
    uint32_t len;
    Deadline deadline(kTimeout);
    while (!c.blk.poll(tag, status, len)) {
      if (deadline.expired()) return "reads did not complete";
      cpu_relax();
    }
    if (status != kBlkOk) return "read failed";
    if (len != kChunk + 1) return "read completed with the wrong used length";
  }
  return verify(c, 0, kReadChunks * kChunk, blk_image_word, "first 64 KiB");
}

const char* read_scattered(const Ctx& c) {
  // header | 512 | 1024 | 512 | status: one request, three data descriptors.
  auto* h = static_cast<BlkHeader*>(dma_alloc(sizeof(BlkHeader) + 8, 16));
  if (!h) return "out of DMA memory";
  *h = BlkHeader{kBlkIn, 0, 200};
  uint8_t* status = reinterpret_cast<uint8_t*>(h + 1);
  *status = 0xee;
  const Buf bufs[] = {buf_out(h, sizeof *h), buf_in(c.buf, 512), buf_in(c.buf + 512, 1024),
                      buf_in(c.buf + 1536, 512), buf_in(status, 1)};
  const int64_t len = c.blk.vq.submit_and_wait(bufs, 5, kTimeout);
  if (len < 0) return "scattered read did not complete";
  if (*status != kBlkOk || len != 2049) return "scattered read failed";
  return verify(c, 200, 2048, blk_image_word, "scattered read of sectors 200-203");
}

const char* expect_status(const Ctx& c, int got, int want, const char* what) {
  if (got == want) return nullptr;
  out << "testguest: blk" << dec(c.index) << " " << what << ": status "
      << (got < 0 ? "timeout" : "") << hex(got < 0 ? 0 : got) << ", expected " << hex(want) << "\n";
  return "unexpected request status";
}

const char* check_serial(const Ctx& c, const char* cmdline) {
  for (uint32_t i = 0; i < kBlkIdBytes + 1; ++i)
    c.buf[i] = 0;
  uint32_t used = 0;
  const int s = c.blk.request(kBlkGetId, 0, c.buf, kBlkIdBytes, &used);
  if (const char* e = expect_status(c, s, kBlkOk, "GET_ID")) return e;
  const char* id = reinterpret_cast<const char*>(c.buf);  // NUL-padded, not terminated at 20
  out << "testguest: blk" << dec(c.index) << " serial \"";
  for (uint32_t i = 0; i < kBlkIdBytes && id[i]; ++i)
    out << ((id[i] >= 0x20 && id[i] < 0x7f) ? id[i] : '?');
  out << "\"\n";
  char want[kBlkIdBytes + 1];
  char key[] = "testguest.blk0.serial=";
  key[13] = static_cast<char>('0' + c.index);
  if (c.index < 10 && cmdline_value(cmdline, key, want, sizeof want)) {
    // The id is NUL-padded to 20 bytes, and not NUL-terminated when it is 20 bytes long.
    uint32_t i = 0;
    while (want[i] && id[i] == want[i])
      ++i;
    if (want[i] || (i < kBlkIdBytes && id[i]))
      return "GET_ID does not return the serial given to --drive";
  }
  return nullptr;
}

const char* check_write(const Ctx& c) {
  const uint64_t sector = c.blk.capacity / 2;
  fill(c.buf, sector * kSector, kWriteBytes, blk_written_word);
  const bool ro = c.blk.read_only();
  for (uint32_t off = 0; off < kWriteBytes; off += kChunk) {
    const int s = c.blk.request(kBlkOut, sector + off / kSector, c.buf + off, kChunk);
    if (const char* e = expect_status(c, s, ro ? kBlkIoErr : kBlkOk, "write")) return e;
  }
  if (const char* e = expect_status(c, c.blk.request(kBlkFlush, 0, nullptr, 0), kBlkOk, "flush"))
    return e;
  for (uint32_t i = 0; i < kWriteBytes; ++i)
    c.buf[i] = 0;
  const int s = c.blk.request(kBlkIn, sector, c.buf, kWriteBytes);
  if (const char* e = expect_status(c, s, kBlkOk, "read back")) return e;
  return verify(c, sector, kWriteBytes, ro ? blk_image_word : blk_written_word,
                ro ? "read-only disk after refused write" : "written data read back");
}

const char* check_disk(BlkDriver& blk, int index, uint8_t* buf, const char* cmdline) {
  const Ctx c{blk, buf, index};
  out << "testguest: blk" << dec(index) << (blk.read_only() ? " ro" : " rw") << " capacity "
      << dec(blk.capacity) << " sectors, features " << hex(blk.offered) << ", queue "
      << dec(blk.vq.size()) << ", seg_max " << dec(blk.seg_max) << ", size_max "
      << dec(blk.size_max) << "\n";
  if (!(blk.features & kBlkFFlush)) return "VIRTIO_BLK_F_FLUSH not offered";
  if (blk.capacity < 2 * (kWriteBytes / kSector) + kReadChunks * kChunk / kSector)
    return "disk too small for the checks (the host test writes 1 MiB)";
  if (const char* e = read_start(c)) return e;
  const uint64_t last = blk.capacity - 1;
  if (const char* e = expect_status(c, blk.request(kBlkIn, last, buf, kSector), kBlkOk,
                                    "read of the last sector"))
    return e;
  if (const char* e = verify(c, last, kSector, blk_image_word, "last sector")) return e;
  if (const char* e = read_scattered(c)) return e;
  if (const char* e = expect_status(c, blk.request(kBlkIn, blk.capacity, buf, kSector), kBlkIoErr,
                                    "read past the end"))
    return e;
  if (const char* e = expect_status(c, blk.request(kBlkIn, last, buf, 2 * kSector), kBlkIoErr,
                                    "read across the end"))
    return e;
  if (const char* e =
          expect_status(c, blk.request(0xff, 0, buf, kSector), kBlkUnsupp, "unknown request type"))
    return e;
  if (const char* e = check_serial(c, cmdline)) return e;
  if (const char* e = check_write(c)) return e;
  out << "testguest: blk" << dec(index) << " ok: " << dec(blk.vq.notifies()) << " notifies\n";
  return nullptr;
}

}  // namespace

ScenarioResult run_blk(const BootInfo& boot) {
  DeviceList list;
  const DeviceInfo* first;  // the loop below visits every disk, this one included
  if (const char* e = start_virtio_device(boot, list, kTypeBlock, first)) return e;
  auto* buf = static_cast<uint8_t*>(dma_alloc(kReadChunks * kChunk, 4096));
  if (!buf) return "out of DMA memory";
  static BlkDriver drivers[4];
  for (int i = 0; i < 4; ++i) {
    const DeviceInfo* info = list.find(kTypeBlock, i);
    if (!info) break;
    if (const char* e = drivers[i].init(*info)) return e;
    if (const char* e = check_disk(drivers[i], i, buf, boot.cmdline)) return e;
    drivers[i].dev.reset();
  }
  return nullptr;
}

}  // namespace testguest
