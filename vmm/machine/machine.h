// Machine: a whole VM assembled from a MachineConfig (the one builder, so the assembly order lives
// in one place): memory, KVM objects, boot structures, vCPUs and devices; then run() to the end.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vmm/base/result.h"
#include "vmm/boot/elf_loader.h"
#include "vmm/devices/bus.h"
#include "vmm/devices/i8042/i8042.h"
#include "vmm/devices/serial/console_sink.h"
#include "vmm/devices/serial/serial.h"
#include "vmm/event/event_loop.h"
#include "vmm/kvm/kvm.h"
#include "vmm/kvm/vcpu.h"
#include "vmm/kvm/vm.h"
#include "vmm/machine/machine_config.h"
#include "vmm/machine/run_control.h"
#include "vmm/memory/guest_memory.h"

namespace carapace {

class Machine {
 public:
  // Validates `config` against the host and builds the VM; nothing runs yet.
  static Result<std::unique_ptr<Machine>> build(const MachineConfig& config);
  ~Machine();

  // Runs every vCPU on its own thread until the guest ends, fails or the timeout expires.
  VmOutcome run();
  std::string outcome_detail() const { return control_.detail() + extra_detail_; }

  const GuestMemory& memory() const { return mem_; }
  const LoadedKernel& kernel() const { return kernel_; }
  const std::string& cmdline() const { return cmdline_; }
  uint64_t console_dropped() const { return console_ ? console_->dropped() : 0; }

 private:
  Machine(Kvm kvm, Vm vm, GuestMemory mem)
      : kvm_(std::move(kvm)), vm_(std::move(vm)), mem_(std::move(mem)) {}

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
  IoBus pio_bus_;
  IoBus mmio_bus_;
  std::unique_ptr<ConsoleSink> console_;
  std::unique_ptr<IrqLine> serial_irq_;
  std::shared_ptr<Serial> serial_;
  std::unique_ptr<EventLoop> event_loop_;
  RunControl control_;
  std::string extra_detail_;
};

}  // namespace carapace
