// Machine: a whole VM assembled from a MachineConfig (the one builder, so the assembly order lives
// in one place): memory, KVM objects, boot structures, vCPUs and devices; then run() to the end.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/base/phase_timer.h"
#include "common/base/result.h"
#include "vmm/boot/elf_loader.h"
#include "vmm/bus/bus.h"
#include "vmm/devices/i8042/i8042.h"
#include "vmm/devices/serial/console_sink.h"
#include "vmm/devices/serial/serial.h"
#include "vmm/event/event_loop.h"
#include "vmm/kvm/kvm.h"
#include "vmm/kvm/vcpu.h"
#include "vmm/kvm/vm.h"
#include "vmm/machine/machine_config.h"
#include "vmm/machine/machine_state.h"
#include "vmm/machine/run_control.h"
#include "vmm/machine/virtio_devices.h"
#include "vmm/memory/guest_memory.h"
#include "vmm/security/seccomp_policy.h"

namespace carapace {

class Machine {
 public:
  // Validates `config` against the host and builds the VM; nothing runs yet.
  static Result<std::unique_ptr<Machine>> build(const MachineConfig& config);
  // Rebuilds a VM from a captured state and its RAM (typically mapped MAP_PRIVATE from a
  // snapshot's memory file). The shape (RAM, vCPUs, CPU template) comes from `state`; console,
  // device backends and timeout from `config`. Nothing runs yet.
  static Result<std::unique_ptr<Machine>> restore(const MachineConfig& config,
                                                  const MachineState& state, GuestMemory mem);

  // The VM's state apart from RAM; the VM must be paused.
  Result<MachineState> capture_state() const;
  ~Machine();

  // Runs every vCPU on its own thread until the guest ends, fails or the timeout expires.
  VmOutcome run();
  // run() in two halves, for callers that control the VM while it runs (the API server).
  void start();
  // start() with every vCPU parked before its first KVM_RUN and device work stopped: the VM
  // costs no CPU until resume() (a pooled VM waiting to be handed out).
  Status start_paused();
  VmOutcome wait();
  // Ends a running VM from outside (API, pool): wait() returns `outcome`.
  void stop(VmOutcome outcome, std::string detail);

  // Stops every vCPU at a clean point (pending I/O completed) and keeps them stopped until
  // resume(). Safe from any thread while the VM runs; an error once the VM has ended.
  Status pause();
  void resume();
  bool paused() const;
  // Whether the run has an outcome (the guest ended, failed, timed out or was stopped); the vCPU
  // threads may still be winding down until wait() returns.
  bool finished() const { return control_.finished(); }
  size_t vcpu_count() const { return vcpus_.size(); }
  std::string outcome_detail() const { return control_.detail() + extra_detail_; }

  const GuestMemory& memory() const { return mem_; }
  const MachineConfig& config() const { return config_; }
  const LoadedKernel& kernel() const { return kernel_; }
  const std::string& cmdline() const { return cmdline_; }
  uint64_t console_dropped() const { return console_ ? console_->dropped() : 0; }
  // Host-side counters by name (console bytes, per-device drops and traffic) for the control
  // API's GET /vm; devices are named by kind and index ("net0_tx_dropped_policy", ...).
  std::map<std::string, uint64_t> counters() const;

  // The virtio-fs devices' tags and shares, in `--fs` order.
  std::vector<VirtioFs::Binding> fs_bindings() const;
  // Binds the folder of the virtio-fs device tagged `tag` (VirtioFs::bind: refused while the
  // guest has it mounted); an unknown tag is invalid input. Later forks get the new share.
  // Serialised by the caller (the control API takes one call at a time).
  Status bind_fs(const std::string& tag, const std::string& shared_dir, FsMode mode);

 private:
  Machine(Kvm kvm, Vm vm, GuestMemory mem)
      : kvm_(std::move(kvm)), vm_(std::move(vm)), mem_(std::move(mem)) {}

  // The parts build() and restore() share: VM, memory slots, irqchip, PIT and devices.
  static Result<std::unique_ptr<Machine>> assemble(Kvm kvm, GuestMemory mem,
                                                   const MachineConfig& config, PhaseTimer& timer);
  Status load_guest(const MachineConfig& config);
  Status create_vcpus(const MachineConfig& config);
  Status create_devices(const MachineConfig& config);

  class VmIrqLine;

  MachineConfig config_;
  Kvm kvm_;
  Vm vm_;
  GuestMemory mem_;
  LoadedKernel kernel_;
  std::string cmdline_;
  BootEntry boot_entry_;
  std::vector<Vcpu> vcpus_;
  std::vector<CpuidTable> cpuids_;             // what each vCPU was given, for snapshots
  mutable std::vector<uint32_t> msr_indices_;  // saveable MSRs, found on the first capture
  // Declared before the buses: the MMIO bus holds the last references to the virtio transports,
  // whose destructors (and the devices', e.g. vsock's listener) remove their fds from the loop.
  std::unique_ptr<EventLoop> event_loop_;
  // The virtio-fs devices' loop (one for all of them, none without): their queues are served
  // there (virtio_devices.h).
  std::vector<std::unique_ptr<EventLoop>> fs_loops_;
  IoBus pio_bus_;
  IoBus mmio_bus_;
  std::unique_ptr<ConsoleSink> console_;
  std::unique_ptr<IrqLine> serial_irq_;
  std::shared_ptr<Serial> serial_;
  // After event_loop_: the devices go first, while the (stopped) loop still exists.
  std::unique_ptr<VirtioDeviceSet> virtio_;
  void kick_all();
  // Stops (and joins) the device loops; idempotent.
  void stop_loops();
  // Installs the calling thread's seccomp filter; on failure ends the VM and returns false.
  bool enter_role(ThreadRole role);

  RunControl control_;
  std::string extra_detail_;
  std::vector<std::thread> threads_;  // one per vCPU while running
  mutable std::mutex pause_mu_;       // serialises pause()/resume()
  bool paused_ = false;
};

}  // namespace carapace
