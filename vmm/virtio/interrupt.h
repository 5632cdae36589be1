// Interrupt: how a virtio transport raises its interrupt line. virtio-mmio keeps the reason in
// InterruptStatus, so the line itself only needs an edge per event; with KVM that edge is an
// irqfd (an eventfd the kernel turns into an interrupt without a trip through user space).
#pragma once

#include <cstdint>

#include "common/base/event_fd.h"
#include "vmm/bus/irq_line.h"

namespace carapace::virtio {

class Interrupt {
 public:
  virtual ~Interrupt() = default;
  // Raises one edge. Safe from any thread; must not block.
  virtual void trigger() = 0;
};

// An EventFd to register with KVM_IRQFD for the slot's IRQ.
class EventFdInterrupt : public Interrupt {
 public:
  explicit EventFdInterrupt(EventFd fd) : fd_(std::move(fd)) {}
  static Result<EventFdInterrupt> create();
  const EventFd& event() const { return fd_; }
  void trigger() override;

 private:
  EventFd fd_;
};

// Pulses an IrqLine (KVM_IRQ_LINE), for when no irqfd is wired.
class IrqLinePulse : public Interrupt {
 public:
  explicit IrqLinePulse(IrqLine* line) : line_(line) {}
  void trigger() override;

 private:
  IrqLine* line_;
};

}  // namespace carapace::virtio
