// The per-vCPU run loop: KVM_RUN, dispatch port-I/O and MMIO exits to the buses, turn terminal
// exits into a VmOutcome. One thread per vCPU runs this until the RunControl says stop.
#pragma once

#include <pthread.h>

#include <atomic>

#include "vmm/bus/bus.h"
#include "vmm/kvm/vcpu.h"
#include "vmm/machine/run_control.h"

namespace carapace {

struct VcpuLoopContext {
  Vcpu* vcpu;
  const IoBus* pio;
  const IoBus* mmio;
  RunControl* control;
};

// Installs the (empty) handler for the signal used to kick vCPUs out of KVM_RUN. Idempotent.
void install_vcpu_kick_handler();
int vcpu_kick_signal();

// Runs until control->finished(). Never throws; host errors end the run as kHostError.
void run_vcpu_loop(const VcpuLoopContext& ctx);

// Makes `vcpu`'s thread leave KVM_RUN promptly: immediate_exit covers the window before it
// enters KVM_RUN, the signal the time inside it.
void kick_vcpu(Vcpu& vcpu, pthread_t thread);

}  // namespace carapace
