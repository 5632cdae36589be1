// VirtioBlock request handling: serving the queue (virtio 1.2 §2.7.10 loop), parsing and
// admitting each request, running it synchronously or on io_uring, and completing it.
#include <linux/falloc.h>

#include <cstring>

#include "common/base/log.h"
#include "vmm/devices/block/disk_file.h"
#include "vmm/devices/block/virtio_block.h"

namespace carapace {

using block::BlockRequest;
using block::RequestKind;

namespace {

// A request whose answer needs no host I/O: an error found by the parser, GET_ID, or an empty
// range.
bool needs_no_io(const BlockRequest& r) {
  if (r.status != VIRTIO_BLK_S_OK || r.kind == RequestKind::kGetId) return true;
  return r.kind != RequestKind::kFlush && r.len == 0;
}

constexpr uint64_t make_tag(uint32_t generation, uint16_t index) {
  return (uint64_t{generation} << 32) | index;
}

}  // namespace

void VirtioBlock::run_locked() {
  process_locked();
  if (!engine_ || !ctx_ || ctx_->loop != nullptr) return;
  // No event loop (unit tests, fuzzing, the bench): nobody else would see the completions.
  while (ctx_ && engine_ && engine_->in_flight() > 0) {
    if (!engine_->wait(1000).ok()) break;
    engine_->reap([this](uint64_t tag, int32_t res) { on_completion_locked(tag, res); });
    process_locked();
  }
}

void VirtioBlock::process_locked() {
  if (!ctx_) return;
  virtio::Queue& q = ctx_->queues[0];
  if (!q.ready()) return;
  bool stop = broken_;
  for (;;) {
    while (!stop) {
      for (;;) {
        auto next = q.pop();
        if (!next.ok()) {  // a corrupt ring: stop until the driver resets us
          broken_ = stop = true;
          ctx_->signals->report_needs_reset(next.error());
          break;
        }
        if (!next->has_value()) break;
        if (!start_locked(std::move(**next))) {  // throttled: the timer resumes us
          q.undo_pop();
          stop = true;
          break;
        }
      }
      if (!stop && !q.enable_notification()) break;
    }
    if (!engine_) break;
    auto s = engine_->submit();
    if (!s.ok()) LOG_ERROR("virtio-blk: %s", s.error().describe().c_str());
    // Page-cache hits complete inside the submit: answer them now rather than one event-loop
    // round trip later. Completions free room (pop() stops at the queue size), so look again.
    if (!reap_on_submit_ ||
        engine_->reap([this](uint64_t tag, int32_t res) { on_completion_locked(tag, res); }) == 0)
      break;
  }
  if (q.needs_notification()) ctx_->signals->signal_used(0);
}

bool VirtioBlock::start_locked(virtio::DescriptorChain chain) {
  if (!engine_ || free_slots_.empty()) {
    // Synchronous (free_slots_ cannot run out: pop() keeps at most the queue size in flight).
    if (!block::parse_request(chain, limits_, sync_req_)) {
      finish_locked(chain.head(), nullptr, 0, false);
      return true;
    }
    if (!admit_locked(sync_req_.charged_bytes())) {
      throttle_locked(sync_req_.charged_bytes());
      return false;
    }
    throttled_ = false;
    execute_sync_locked(chain, sync_req_);
    return true;
  }
  const uint16_t index = free_slots_.back();
  Slot& slot = slots_[index];
  // The chain goes into its slot first: the request's iovecs and writers point into it.
  slot.chain.emplace(std::move(chain));
  const uint16_t head = slot.chain->head();
  if (!block::parse_request(*slot.chain, limits_, slot.req)) {
    slot.chain.reset();
    finish_locked(head, nullptr, 0, false);
    return true;
  }
  if (!admit_locked(slot.req.charged_bytes())) {
    throttle_locked(slot.req.charged_bytes());
    slot.chain.reset();
    return false;
  }
  throttled_ = false;
  if (needs_no_io(slot.req)) {
    execute_sync_locked(*slot.chain, slot.req);
    slot.chain.reset();
    return true;
  }
  free_slots_.pop_back();
  slot.generation = ++generation_;
  slot.iov_start = 0;
  slot.done = 0;
  if (!submit_locked(slot, make_tag(slot.generation, index))) {
    LOG_ERROR("virtio-blk: io_uring submission queue full");
    finish_locked(head, &slot.req, VIRTIO_BLK_S_IOERR, true);
    release_slot_locked(index);
  }
  return true;
}

void VirtioBlock::execute_sync_locked(const virtio::DescriptorChain& chain, BlockRequest& req) {
  Status s;
  if (req.status == VIRTIO_BLK_S_OK) {
    switch (req.kind) {
      case RequestKind::kRead:
        s = image_->read(req.offset, req.iov);
        break;
      case RequestKind::kWrite:
        s = image_->write(req.offset, req.iov);
        break;
      case RequestKind::kFlush:
        s = image_->flush();
        break;
      case RequestKind::kGetId:
        s = req.id.write(serial_);
        break;
      case RequestKind::kDiscard:
        s = image_->discard(req.offset, req.len);
        break;
      case RequestKind::kWriteZeroes:
        s = image_->write_zeroes(req.offset, req.len);
        break;
      case RequestKind::kNone:
        s = make_error("no request");
        break;
    }
  }
  if (!s.ok()) {
    if (warnings_left_.load(std::memory_order_relaxed) > 0) {
      warnings_left_.fetch_sub(1, std::memory_order_relaxed);
      LOG_WARN("virtio-blk: request type %u: %s", req.type, s.error().describe().c_str());
    }
    finish_locked(chain.head(), &req, VIRTIO_BLK_S_IOERR, true);
    return;
  }
  finish_locked(chain.head(), &req, req.status, false);
}

bool VirtioBlock::submit_locked(Slot& slot, uint64_t tag) {
  const int fd = image_->direct_fd();
  BlockRequest& r = slot.req;
  const iovec* iov = r.iov.data() + slot.iov_start;
  const unsigned count = static_cast<unsigned>(r.iov.size() - slot.iov_start);
  switch (r.kind) {
    case RequestKind::kRead:
      return engine_->read(tag, fd, iov, count, r.offset + slot.done);
    case RequestKind::kWrite:
      return engine_->write(tag, fd, iov, count, r.offset + slot.done);
    case RequestKind::kFlush:
      return engine_->fdatasync(tag, fd);
    case RequestKind::kDiscard:
    case RequestKind::kWriteZeroes:
      // Both punch a hole: discarded sectors read zeroes, and write_zeroes_may_unmap is set.
      return engine_->fallocate(tag, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, r.offset,
                                r.len);
    default:
      return false;
  }
}

void VirtioBlock::on_completion_locked(uint64_t tag, int32_t result) {
  const uint16_t index = static_cast<uint16_t>(tag & 0xffff);
  if (index >= slots_.size()) return;
  Slot& slot = slots_[index];
  if (!slot.chain || slot.generation != static_cast<uint32_t>(tag >> 32)) return;  // stale
  BlockRequest& r = slot.req;
  int err = result < 0 ? -result : 0;
  switch (r.kind) {
    case RequestKind::kRead:
    case RequestKind::kWrite:
      if (result == 0) err = EIO;  // end of file: the image shrank under us
      if (result > 0) {
        slot.done += static_cast<uint64_t>(result);
        if (slot.done < r.len) {  // a short transfer: go on from where it stopped
          block::iov_advance(r.iov, &slot.iov_start, static_cast<uint64_t>(result));
          if (submit_locked(slot, tag)) return;
          err = EAGAIN;
        }
      }
      break;
    case RequestKind::kDiscard:
      if (err == EOPNOTSUPP) err = 0;  // discard is a hint
      break;
    case RequestKind::kWriteZeroes:
      if (err == EOPNOTSUPP) {  // no holes here: zero the range the slow way
        auto s = block::zero_file_range(image_->direct_fd(), r.offset, r.len);
        err = s.ok() ? 0 : (s.error().sys_errno ? s.error().sys_errno : EIO);
      }
      break;
    default:
      break;
  }
  if (err != 0 && warnings_left_.load(std::memory_order_relaxed) > 0) {
    warnings_left_.fetch_sub(1, std::memory_order_relaxed);
    LOG_WARN("virtio-blk: request type %u at byte %llu: %s", r.type,
             static_cast<unsigned long long>(r.offset), std::strerror(err));
  }
  finish_locked(slot.chain->head(), &r, err ? VIRTIO_BLK_S_IOERR : VIRTIO_BLK_S_OK, err != 0);
  release_slot_locked(index);
}

void VirtioBlock::finish_locked(uint16_t head, BlockRequest* req, uint8_t status, bool host_error) {
  stats_.requests.fetch_add(1, std::memory_order_relaxed);
  uint32_t used = 0;
  if (req == nullptr || status != VIRTIO_BLK_S_OK) {
    stats_.errors.fetch_add(1, std::memory_order_relaxed);
    if (host_error)
      stats_.io_errors.fetch_add(1, std::memory_order_relaxed);
    else if (ctx_ && ctx_->errors)
      ctx_->errors->bad_request.fetch_add(1, std::memory_order_relaxed);
  } else if (req->kind == RequestKind::kRead) {
    stats_.read_bytes.fetch_add(req->len, std::memory_order_relaxed);
  } else if (req->kind == RequestKind::kWrite) {
    stats_.write_bytes.fetch_add(req->len, std::memory_order_relaxed);
  } else if (req->kind == RequestKind::kFlush) {
    stats_.flushes.fetch_add(1, std::memory_order_relaxed);
  }
  // req == nullptr: dropped, nowhere to put a status (docs/security.md #13, #15): length 0.
  if (req != nullptr && req->status_byte.write_obj(status).ok()) used = req->used_len;
  if (ctx_) (void)ctx_->queues[0].add_used(head, used);
}

void VirtioBlock::release_slot_locked(uint16_t index) {
  slots_[index].chain.reset();
  free_slots_.push_back(index);
}

}  // namespace carapace
