// An 8250/16550A UART, enough for Linux's 8250 driver and the test guest: divisor latch,
// interrupt enable/identification, line and modem control with loopback, scratch register,
// a bounded receive FIFO fed from the host, and transmit straight to a ConsoleSink.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <span>

#include "vmm/bus/bus.h"
#include "vmm/bus/irq_line.h"
#include "vmm/devices/serial/console_sink.h"

namespace carapace {

class Serial : public BusDevice {
 public:
  static constexpr uint64_t kCom1Base = 0x3f8;
  static constexpr uint32_t kCom1Irq = 4;
  static constexpr uint64_t kRegisterCount = 8;
  static constexpr size_t kRxFifoCapacity = 64;

  // `sink` and `irq` must outlive the device; either may be null (output dropped / no IRQ).
  Serial(ConsoleSink* sink, IrqLine* irq) : sink_(sink), irq_(irq) {}

  void read(uint64_t offset, std::span<uint8_t> data) override;
  void write(uint64_t offset, std::span<const uint8_t> data) override;

  // Host → guest bytes (console input). Returns how many fitted in the FIFO.
  size_t enqueue_input(std::span<const uint8_t> bytes);

  // The register file, for snapshots. Pending receive bytes are not kept: console input is not
  // part of a VM's state.
  struct State {
    uint8_t ier, lcr, mcr, scr, fcr, dll, dlm;
    bool thr_empty_pending;
  };
  State save() const;
  // Values are masked as if the guest had written them (docs/security.md #22).
  void restore(const State& state);

 private:
  uint8_t read_register(uint64_t reg);
  void write_register(uint64_t reg, uint8_t value);
  uint8_t interrupt_id() const;
  void update_irq();
  bool dlab() const { return lcr_ & 0x80; }
  bool loopback() const { return mcr_ & 0x10; }

  ConsoleSink* sink_;
  IrqLine* irq_;
  mutable std::mutex mu_;
  std::deque<uint8_t> rx_;
  uint8_t ier_ = 0, lcr_ = 0x03, mcr_ = 0x08, scr_ = 0, fcr_ = 0;
  uint8_t dll_ = 0x0c, dlm_ = 0;    // 9600 baud, as after a PC BIOS
  bool thr_empty_pending_ = false;  // THRE interrupt until IIR is read or THR written
  bool irq_high_ = false;
};

}  // namespace carapace
