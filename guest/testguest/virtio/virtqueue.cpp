#include "guest/testguest/virtio/virtqueue.h"

#include "guest/testguest/cpu.h"
#include "guest/testguest/virtio/dma.h"

extern "C" void* memset(void* dest, int value, size_t n);

namespace testguest::virtio {
namespace {

// Byte sizes of the three parts, event-idx fields included (virtio 1.2 §2.7).
constexpr uint64_t avail_bytes(uint32_t size) {
  return 6 + 2 * uint64_t{size};
}
constexpr uint64_t used_bytes(uint32_t size) {
  return 6 + 8 * uint64_t{size};
}

// vring_need_event (virtio 1.2 §2.7.10): notify iff `event` lies in [old_idx, new_idx).
bool need_event(uint16_t event, uint16_t new_idx, uint16_t old_idx) {
  return static_cast<uint16_t>(new_idx - event - 1) < static_cast<uint16_t>(new_idx - old_idx);
}

uint16_t load_acquire(const volatile uint16_t* p) {
  const uint16_t v = *p;
  compiler_barrier();
  return v;
}

}  // namespace

uint64_t Virtqueue::desc_addr() const {
  return phys(desc_);
}
uint64_t Virtqueue::avail_addr() const {
  return phys(avail_);
}
uint64_t Virtqueue::used_addr() const {
  return phys(used_);
}

const char* Virtqueue::setup(const Device& dev, uint16_t index, uint16_t want_size,
                             bool event_idx) {
  dev.write(kQueueSel, index);
  const uint32_t max = dev.read(kQueueNumMax);
  if (max == 0) return "queue not available (QueueNumMax 0)";
  uint32_t size = 1;
  while (size * 2 <= max && size * 2 <= want_size && size * 2 <= kMaxSize)
    size *= 2;
  if (!desc_) {  // the first setup sizes the rings for the largest queue
    desc_ = static_cast<Desc*>(dma_alloc(sizeof(Desc) * kMaxSize, 4096));
    avail_ = static_cast<volatile uint16_t*>(dma_alloc(avail_bytes(kMaxSize), 64));
    used_ = static_cast<volatile uint8_t*>(dma_alloc(used_bytes(kMaxSize), 64));
    free_ = static_cast<uint16_t*>(dma_alloc(2 * kMaxSize, 64));
    chain_next_ = static_cast<uint16_t*>(dma_alloc(2 * kMaxSize, 64));
    chain_len_ = static_cast<uint16_t*>(dma_alloc(2 * kMaxSize, 64));
    if (!desc_ || !avail_ || !used_ || !free_ || !chain_next_ || !chain_len_)
      return "out of DMA memory for rings";
  }
  dev_ = &dev;
  index_ = index;
  size_ = static_cast<uint16_t>(size);
  event_idx_ = event_idx;
  memset(desc_, 0, sizeof(Desc) * kMaxSize);
  memset(const_cast<uint16_t*>(avail_), 0, avail_bytes(kMaxSize));
  memset(const_cast<uint8_t*>(used_), 0, used_bytes(kMaxSize));
  for (uint16_t i = 0; i < size_; ++i) {
    free_[i] = static_cast<uint16_t>(size_ - 1 - i);
    chain_len_[i] = 0;
  }
  free_count_ = size_;
  avail_shadow_ = published_ = last_used_ = 0;
  notifies_ = 0;
  if (event_idx_) {
    // used_event half the index space away: the device never finds it in the window of new
    // completions, so it sends no interrupts (this driver polls).
    avail_[2 + size_] = 0x8000;
  } else {
    avail_[0] = kAvailNoInterrupt;
  }

  dev.write(kQueueNum, size_);
  dev.write(kQueueDescLow, static_cast<uint32_t>(phys(desc_)));
  dev.write(kQueueDescHigh, static_cast<uint32_t>(phys(desc_) >> 32));
  dev.write(kQueueDriverLow, static_cast<uint32_t>(phys(avail_)));
  dev.write(kQueueDriverHigh, static_cast<uint32_t>(phys(avail_) >> 32));
  dev.write(kQueueDeviceLow, static_cast<uint32_t>(phys(used_)));
  dev.write(kQueueDeviceHigh, static_cast<uint32_t>(phys(used_) >> 32));
  compiler_barrier();  // the rings are initialised before the device may look at them
  dev.write(kQueueReady, 1);
  return nullptr;
}

int Virtqueue::take_chain(int n, uint16_t* ids) {
  if (n <= 0 || n > free_count_) return -1;
  for (int i = 0; i < n; ++i)
    ids[i] = free_[--free_count_];
  for (int i = 0; i + 1 < n; ++i)
    chain_next_[ids[i]] = ids[i + 1];
  chain_len_[ids[0]] = static_cast<uint16_t>(n);
  return ids[0];
}

int Virtqueue::add(const Buf* bufs, int n) {
  uint16_t ids[64];
  if (n > 64) return -1;
  const int head = take_chain(n, ids);
  if (head < 0) return -1;
  for (int i = 0; i < n; ++i) {
    Desc& d = desc_[ids[i]];
    d.addr = bufs[i].addr;
    d.len = bufs[i].len;
    d.flags = static_cast<uint16_t>((bufs[i].device_writes ? kDescWrite : 0) |
                                    (i + 1 < n ? kDescNext : 0));
    d.next = i + 1 < n ? ids[i + 1] : 0;
  }
  push_avail(static_cast<uint16_t>(head));
  return head;
}

void Virtqueue::push_avail(uint16_t head) {
  avail_[2 + avail_shadow_ % size_] = head;
  ++avail_shadow_;
}

void Virtqueue::publish_avail_idx(uint16_t idx) {
  compiler_barrier();  // descriptors and ring entries first (release)
  avail_[1] = idx;
}

void Virtqueue::kick() {
  const uint16_t old_idx = published_;
  const uint16_t new_idx = avail_shadow_;
  publish_avail_idx(new_idx);
  published_ = new_idx;
  // The device's suppression field must be read after our avail.idx store is visible.
  virt_full_fence();
  bool wanted;
  if (event_idx_) {
    const uint16_t avail_event = *reinterpret_cast<volatile uint16_t*>(used_ + 4 + 8 * size_);
    wanted = need_event(avail_event, new_idx, old_idx);
  } else {
    wanted = !(*reinterpret_cast<volatile uint16_t*>(used_) & kUsedNoNotify);
  }
  if (wanted && new_idx != old_idx) {
    ++notifies_;
    notify();
  }
}

uint16_t Virtqueue::used_idx() const {
  return load_acquire(reinterpret_cast<volatile uint16_t*>(used_ + 2));
}

void Virtqueue::free_chain(uint16_t head) {
  uint16_t n = chain_len_[head];
  chain_len_[head] = 0;
  uint16_t id = head;
  while (n--) {
    free_[free_count_++] = id;
    id = chain_next_[id];
  }
}

bool Virtqueue::pop_used(uint32_t& head, uint32_t& len) {
  if (used_idx() == last_used_) return false;
  // The acquire load of used.idx above orders this element read after it.
  const volatile UsedElem* elem =
      reinterpret_cast<volatile UsedElem*>(used_ + 4) + (last_used_ % size_);
  head = elem->id;
  len = elem->len;
  ++last_used_;
  // A head we never handed out would corrupt the free list: only free real chains.
  if (head < size_ && chain_len_[head] != 0) free_chain(static_cast<uint16_t>(head));
  return true;
}

bool Virtqueue::wait_used(uint32_t& head, uint32_t& len, uint64_t timeout_cycles) {
  Deadline deadline(timeout_cycles);
  while (!pop_used(head, len)) {
    if (deadline.expired()) return false;
    cpu_relax();
  }
  return true;
}

int64_t Virtqueue::submit_and_wait(const Buf* bufs, int n, uint64_t timeout_cycles) {
  const int head = add(bufs, n);
  if (head < 0) return -1;
  kick();
  uint32_t got, len;
  if (!wait_used(got, len, timeout_cycles) || got != static_cast<uint32_t>(head)) return -1;
  return len;
}

}  // namespace testguest::virtio
