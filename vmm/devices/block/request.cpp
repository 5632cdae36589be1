#include "vmm/devices/block/request.h"

#include <cstddef>

#include "vmm/devices/block/disk_image.h"

namespace carapace::block {

namespace {

static_assert(sizeof(virtio_blk_outhdr) == 16);
static_assert(sizeof(virtio_blk_discard_write_zeroes) == 16);

// [sector, sector + count) inside the disk, without overflow (docs/security.md #14).
bool in_capacity(uint64_t sector, uint64_t count, uint64_t capacity) {
  return sector <= capacity && count <= capacity - sector;
}

// A read or write: `len` bytes at `sector`, whole sectors inside the disk.
uint8_t check_data_range(uint64_t sector, uint64_t len, const DiskLimits& limits,
                         BlockRequest& out) {
  if (len % kSectorSize != 0) return VIRTIO_BLK_S_IOERR;
  if (!in_capacity(sector, len >> kSectorShift, limits.capacity_sectors)) return VIRTIO_BLK_S_IOERR;
  out.offset = sector << kSectorShift;  // < capacity_bytes: cannot overflow
  out.len = len;
  return VIRTIO_BLK_S_OK;
}

// Turns the rest of a reader or writer into iovecs over guest memory. The segments were checked
// when the chain was parsed; next_slice() checks each again.
template <typename Cursor>
bool collect_iov(Cursor& cursor, std::vector<iovec>& iov) {
  while (cursor.available() > 0) {
    auto slice = cursor.next_slice(cursor.available());
    if (!slice.ok() || slice->empty()) return false;
    iov.push_back({slice->data(), slice->size()});
  }
  return true;
}

// DISCARD and WRITE_ZEROES (virtio 1.2 §5.2.6): one 16-byte range, as max_*_seg = 1 promises.
uint8_t parse_range(virtio::ChainReader& reader, const DiskLimits& limits, BlockRequest& out) {
  if (limits.read_only) return VIRTIO_BLK_S_IOERR;
  if (!limits.discard) return VIRTIO_BLK_S_UNSUPP;
  if (reader.available() != sizeof(virtio_blk_discard_write_zeroes)) return VIRTIO_BLK_S_IOERR;
  auto range = reader.read_obj<virtio_blk_discard_write_zeroes>();
  if (!range.ok()) return VIRTIO_BLK_S_IOERR;
  const bool discard = out.kind == RequestKind::kDiscard;
  // virtio 1.2 §5.2.6.2: unknown flags, or UNMAP on a discard, are UNSUPP.
  const uint32_t allowed = discard ? 0 : VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP;
  if (range->flags & ~allowed) return VIRTIO_BLK_S_UNSUPP;
  const uint32_t max = discard ? limits.max_discard_sectors : limits.max_write_zeroes_sectors;
  if (range->num_sectors > max) return VIRTIO_BLK_S_IOERR;
  if (!in_capacity(range->sector, range->num_sectors, limits.capacity_sectors))
    return VIRTIO_BLK_S_IOERR;
  out.offset = range->sector << kSectorShift;
  out.len = uint64_t{range->num_sectors} << kSectorShift;
  return VIRTIO_BLK_S_OK;
}

}  // namespace

bool parse_request(const virtio::DescriptorChain& chain, const DiskLimits& limits,
                   BlockRequest& out) {
  out.type = 0;
  out.kind = RequestKind::kNone;
  out.status = VIRTIO_BLK_S_OK;
  out.offset = out.len = 0;
  out.iov.clear();
  out.id = {};
  out.used_len = 0;

  virtio::ChainWriter writer = chain.writer();
  // The status is the last writable byte (virtio 1.2 §5.2.6). None: nowhere to answer.
  if (writer.available() == 0) return false;
  auto status = writer.split_end(1);
  if (!status.ok()) return false;
  out.status_byte = *status;
  out.used_len = chain.writable_bytes();

  virtio::ChainReader reader = chain.reader();
  auto header = reader.read_obj<virtio_blk_outhdr>();
  if (!header.ok()) {
    out.status = VIRTIO_BLK_S_IOERR;
    return true;
  }
  out.type = header->type;
  const uint64_t sector = header->sector;
  switch (header->type) {
    case VIRTIO_BLK_T_IN:
      out.kind = RequestKind::kRead;
      out.status = check_data_range(sector, writer.available(), limits, out);
      if (out.status == VIRTIO_BLK_S_OK && !collect_iov(writer, out.iov))
        out.status = VIRTIO_BLK_S_IOERR;
      break;
    case VIRTIO_BLK_T_OUT:
      out.kind = RequestKind::kWrite;
      // virtio 1.2 §5.2.6.2: a write to a read-only device is IOERR, and no data is written.
      out.status = limits.read_only ? VIRTIO_BLK_S_IOERR
                                    : check_data_range(sector, reader.available(), limits, out);
      if (out.status == VIRTIO_BLK_S_OK && !collect_iov(reader, out.iov))
        out.status = VIRTIO_BLK_S_IOERR;
      break;
    case VIRTIO_BLK_T_FLUSH:
      out.kind = RequestKind::kFlush;
      break;
    case VIRTIO_BLK_T_GET_ID:
      out.kind = RequestKind::kGetId;
      if (writer.available() < VIRTIO_BLK_ID_BYTES)
        out.status = VIRTIO_BLK_S_IOERR;
      else
        out.id = writer;
      break;
    case VIRTIO_BLK_T_DISCARD:
    case VIRTIO_BLK_T_WRITE_ZEROES:
      out.kind =
          header->type == VIRTIO_BLK_T_DISCARD ? RequestKind::kDiscard : RequestKind::kWriteZeroes;
      out.status = parse_range(reader, limits, out);
      break;
    default:  // legacy SCSI, barriers, secure erase, zoned, ...: not offered
      out.status = VIRTIO_BLK_S_UNSUPP;
      break;
  }
  if (out.status != VIRTIO_BLK_S_OK) {
    out.offset = out.len = 0;
    out.iov.clear();
  }
  return true;
}

}  // namespace carapace::block
