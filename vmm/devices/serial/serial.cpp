#include "vmm/devices/serial/serial.h"

namespace carapace {

namespace {
// Register numbers (offsets from the base port) and bits, from the 16550A data sheet.
enum Reg : uint64_t {
  kData = 0,
  kIer = 1,
  kIir = 2,
  kLcr = 3,
  kMcr = 4,
  kLsr = 5,
  kMsr = 6,
  kScr = 7
};
constexpr uint8_t kIerRxData = 0x01, kIerThrEmpty = 0x02;
constexpr uint8_t kIirNone = 0x01, kIirThrEmpty = 0x02, kIirRxData = 0x04, kIirFifoOn = 0xc0;
constexpr uint8_t kLsrDataReady = 0x01, kLsrThrEmpty = 0x20, kLsrIdle = 0x40;
constexpr uint8_t kMcrDtr = 0x01, kMcrRts = 0x02, kMcrOut1 = 0x04, kMcrOut2 = 0x08;
constexpr uint8_t kMsrCts = 0x10, kMsrDsr = 0x20, kMsrRi = 0x40, kMsrDcd = 0x80;
constexpr uint8_t kFcrEnable = 0x01, kFcrClearRx = 0x02;
}  // namespace

void Serial::read(uint64_t offset, std::span<uint8_t> data) {
  std::lock_guard<std::mutex> lock(mu_);
  // Wider accesses read consecutive registers; bytes past the last register read as ones.
  for (size_t i = 0; i < data.size(); ++i) {
    uint64_t reg = offset + i;
    data[i] = reg < kRegisterCount ? read_register(reg) : 0xff;
  }
  update_irq();
}

void Serial::write(uint64_t offset, std::span<const uint8_t> data) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < data.size(); ++i)
    if (offset + i < kRegisterCount) write_register(offset + i, data[i]);
  update_irq();
}

size_t Serial::enqueue_input(std::span<const uint8_t> bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (uint8_t b : bytes) {
    if (rx_.size() >= kRxFifoCapacity) break;
    rx_.push_back(b);
    ++n;
  }
  update_irq();
  return n;
}

Serial::State Serial::save() const {
  std::lock_guard<std::mutex> lock(mu_);
  return State{ier_, lcr_, mcr_, scr_, fcr_, dll_, dlm_, thr_empty_pending_};
}

void Serial::restore(const State& s) {
  std::lock_guard<std::mutex> lock(mu_);
  ier_ = s.ier & 0x0f;
  lcr_ = s.lcr;
  mcr_ = s.mcr & 0x1f;
  scr_ = s.scr;
  fcr_ = s.fcr & kFcrEnable;
  dll_ = s.dll;
  dlm_ = s.dlm;
  thr_empty_pending_ = s.thr_empty_pending;
  rx_.clear();
  irq_high_ = false;
  update_irq();
}

uint8_t Serial::interrupt_id() const {
  if ((ier_ & kIerRxData) && !rx_.empty()) return kIirRxData;
  if ((ier_ & kIerThrEmpty) && thr_empty_pending_) return kIirThrEmpty;
  return kIirNone;
}

uint8_t Serial::read_register(uint64_t reg) {
  switch (reg) {
    case kData: {
      if (dlab()) return dll_;
      if (rx_.empty()) return 0;
      uint8_t b = rx_.front();
      rx_.pop_front();
      return b;
    }
    case kIer:
      return dlab() ? dlm_ : ier_;
    case kIir: {
      uint8_t id = interrupt_id();
      // Reading IIR while it reports THR empty acknowledges that interrupt.
      if (id == kIirThrEmpty) thr_empty_pending_ = false;
      return id | ((fcr_ & kFcrEnable) ? kIirFifoOn : 0);
    }
    case kLcr:
      return lcr_;
    case kMcr:
      return mcr_;
    case kLsr:
      // Transmission is instantaneous: the holding register is always empty.
      return (rx_.empty() ? 0 : kLsrDataReady) | kLsrThrEmpty | kLsrIdle;
    case kMsr:
      if (loopback()) {
        // In loopback the modem outputs are wired back to the inputs (16550A section 8.6).
        return ((mcr_ & kMcrDtr) ? kMsrDsr : 0) | ((mcr_ & kMcrRts) ? kMsrCts : 0) |
               ((mcr_ & kMcrOut1) ? kMsrRi : 0) | ((mcr_ & kMcrOut2) ? kMsrDcd : 0);
      }
      return kMsrDcd | kMsrDsr | kMsrCts;
    case kScr:
      return scr_;
  }
  return 0xff;
}

void Serial::write_register(uint64_t reg, uint8_t value) {
  switch (reg) {
    case kData:
      if (dlab()) {
        dll_ = value;
      } else if (loopback()) {
        if (rx_.size() < kRxFifoCapacity) rx_.push_back(value);
        thr_empty_pending_ = true;
      } else {
        if (sink_) sink_->put(value);
        thr_empty_pending_ = true;
      }
      break;
    case kIer:
      if (dlab()) {
        dlm_ = value;
      } else {
        // Enabling the THRE interrupt while THR is empty raises it at once.
        if (!(ier_ & kIerThrEmpty) && (value & kIerThrEmpty)) thr_empty_pending_ = true;
        ier_ = value & 0x0f;
      }
      break;
    case kIir:  // FIFO control register on write
      if (value & kFcrClearRx) rx_.clear();
      fcr_ = value & kFcrEnable;
      break;
    case kLcr:
      lcr_ = value;
      break;
    case kMcr:
      mcr_ = value & 0x1f;
      break;
    case kScr:
      scr_ = value;
      break;
    default:  // LSR and MSR are read-only
      break;
  }
}

void Serial::update_irq() {
  bool high = interrupt_id() != kIirNone;
  if (high != irq_high_) {
    irq_high_ = high;
    if (irq_) irq_->set_level(high);
  }
}

}  // namespace carapace
