// Deferred KVM teardown. Destroying a VM in the kernel waits for SRCU/RCU grace periods and for
// the PIT worker thread: ~20 ms on some hosts, longer than booting a small guest. None of it
// concerns the caller once the run's outcome is known, so `carapace run` hands its KVM file
// descriptors to a short-lived detached child and exits at once; the child's exit pays for the
// teardown off the caller's critical path. Guest RAM is not inherited (MADV_DONTFORK), so it is
// freed when the VMM exits, not when the child does.
#pragma once

namespace carapace {

// Forks a child that keeps every open fd (and so the VM alive in the kernel) and then exits,
// closing its stdio first so readers of the VMM's output see EOF immediately. Call only when
// no other thread is running. Returns without forking when fork fails (teardown then happens
// in the caller's exit, as it would anyway).
void hand_off_kvm_teardown();

}  // namespace carapace
