// Parsing one virtio-blk request (virtio 1.2 §5.2.6): a 16-byte header (type, reserved, sector)
// at the start of the driver-readable part, the data, and a 1-byte status as the last
// device-writable byte. Everything a guest controls is checked here, before any host I/O:
//   - no writable byte for the status: the request is dropped (used length 0), the queue goes on
//     (a header-only chain, a status descriptor of the wrong direction; docs/security.md #13, #15);
//   - an unknown type: VIRTIO_BLK_S_UNSUPP (docs/security.md #15);
//   - a data length that is not a multiple of 512, a range past the capacity or overflowing 64
//     bits, a write-type request to a read-only disk, a GET_ID buffer shorter than 20 bytes, a
//     short header: VIRTIO_BLK_S_IOERR with no host I/O (docs/security.md #14).
#pragma once

#include <linux/virtio_blk.h>
#include <sys/uio.h>

#include <cstdint>
#include <vector>

#include "vmm/virtio/descriptor_chain.h"

namespace carapace::block {

// What the parser needs to know about the disk.
struct DiskLimits {
  uint64_t capacity_sectors = 0;
  bool read_only = false;
  bool discard = false;  // DISCARD and WRITE_ZEROES offered
  uint32_t max_discard_sectors = 0;
  uint32_t max_write_zeroes_sectors = 0;
};

enum class RequestKind { kRead, kWrite, kFlush, kGetId, kDiscard, kWriteZeroes, kNone };

struct BlockRequest {
  uint32_t type = 0;  // as the guest wrote it
  RequestKind kind = RequestKind::kNone;
  // VIRTIO_BLK_S_OK: do the I/O below. Otherwise answer this status and touch nothing.
  uint8_t status = VIRTIO_BLK_S_OK;
  uint64_t offset = 0;  // bytes into the disk (kRead, kWrite, kDiscard, kWriteZeroes)
  uint64_t len = 0;     // bytes
  // kRead/kWrite: the data buffers in guest memory, len bytes in all. Reused between requests.
  std::vector<iovec> iov;
  virtio::ChainWriter id;  // kGetId: where the 20-byte serial goes
  virtio::ChainWriter status_byte;
  // The used length once answered: every writable byte up to and including the status (the
  // device owns the whole writable part; virtio 1.2 §2.7.8.1 lets it report that).
  uint32_t used_len = 0;

  // Bytes the rate limiter charges: the data moved by reads and writes.
  uint64_t charged_bytes() const {
    return kind == RequestKind::kRead || kind == RequestKind::kWrite ? len : 0;
  }
};

// Fills `out` from `chain` (which must outlive it: the writers and iovecs point into the chain's
// guest buffers). Returns false when the chain has no writable byte for a status: drop it.
bool parse_request(const virtio::DescriptorChain& chain, const DiskLimits& limits,
                   BlockRequest& out);

}  // namespace carapace::block
