#include "vmm/virtio/interrupt.h"

#include <sys/eventfd.h>

#include "common/base/log.h"

namespace carapace::virtio {

Result<EventFdInterrupt> EventFdInterrupt::create() {
  return EventFdInterrupt(TRY(EventFd::create(EFD_NONBLOCK)));
}

void EventFdInterrupt::trigger() {
  // Only fails if the counter would overflow (never, with KVM draining it) or on a bad fd.
  auto s = fd_.write(1);
  if (!s.ok()) LOG_WARN("virtio irqfd: %s", s.error().describe().c_str());
}

void IrqLinePulse::trigger() {
  if (line_ == nullptr) return;
  line_->set_level(true);
  line_->set_level(false);
}

}  // namespace carapace::virtio
