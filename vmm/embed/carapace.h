// The embedding API of carapace: everything a program needs to run microVMs in its own process,
// with one include. Link carapace::pool (find_package(carapace)) or `pkg-config carapace`.
//
// The calls, in the order a VM meets them (each returns Result<T>/Status: errors are values,
// never exceptions; check .ok() and read .error().describe()):
//
//   MachineConfig c;                      vmm/machine/machine_config.h: kernel, initrd, command
//   c.kernel_path = ...;                  line, RAM, vCPUs, CPU template, console, devices
//   c.devices.vsock = VsockDeviceConfig{3, "/run/vm.sock"};   (block, net, vsock, rng: each
//                                         device's <name>_config.h under vmm/devices/)
//   auto vm = Machine::build(c);          checks the host and the kernel; nothing runs yet
//   (*vm)->start();                       one thread per vCPU and one for device work
//   (*vm)->pause(); (*vm)->resume();      every vCPU out of KVM_RUN at a clean point, and back
//   snapshot_machine(**vm, dir);          snapshot/machine_snapshot.h: state + sparse RAM file,
//                                         written atomically; a running VM goes on, one the
//                                         caller paused stays paused
//   restore_machine_from_snapshot(dir, c) a new Machine from a snapshot directory; start() it
//   fork_machine(**vm, {c1, c2});         vmm/pool/clone_source.h: children that share the
//                                         parent's clean RAM pages; the parent keeps running
//   (*vm)->wait();                        the VmOutcome: guest reset, panic, triple fault, ...
//
// A Machine's control calls (pause, resume, snapshot, fork) are made from one thread at a time.
// Seccomp is off unless the program calls enable_seccomp() (vmm/security/seccomp.h) before it
// builds a VM; then every thread the VMM starts installs its role's filter before guest work.
// docs/embedding.md has the rest.
#pragma once

#include "carapace/version.h"
#include "common/base/result.h"
#include "snapshot/machine_snapshot.h"
#include "vmm/machine/exit_status.h"
#include "vmm/machine/machine.h"
#include "vmm/machine/machine_config.h"
#include "vmm/pool/clone_source.h"
#include "vmm/security/seccomp.h"
