// Scenarios: one per `testguest.run=NAME`. Each returns nullptr when it passed, or the reason that
// goes on its `TESTGUEST FAIL NAME: REASON` line (diagnostics go on `testguest: ` lines before).
#pragma once

#include "guest/testguest/boot_info.h"

namespace testguest {

using ScenarioResult = const char*;

struct Scenario {
  const char* name;
  ScenarioResult (*run)(const BootInfo& boot);
};

const Scenario* find_scenario(const char* name);

ScenarioResult run_boot_info(const BootInfo& boot);
ScenarioResult run_serial(const BootInfo& boot);
ScenarioResult run_memory(const BootInfo& boot);
ScenarioResult run_timer(const BootInfo& boot);
ScenarioResult run_smp(const BootInfo& boot);
ScenarioResult run_fault(const BootInfo& boot);
ScenarioResult run_panic(const BootInfo& boot);
ScenarioResult run_serial_flood(const BootInfo& boot);
// Snapshot scenarios.
ScenarioResult run_counter(const BootInfo& boot);
ScenarioResult run_idle(const BootInfo& boot);
ScenarioResult run_restore_notice(const BootInfo& boot);
ScenarioResult run_agent_ping(const BootInfo& boot);
// virtio scenarios (drivers in guest/testguest/virtio/).
ScenarioResult run_rng(const BootInfo& boot);
ScenarioResult run_blk(const BootInfo& boot);
ScenarioResult run_net(const BootInfo& boot);
ScenarioResult run_vsock(const BootInfo& boot);
ScenarioResult run_fs(const BootInfo& boot);
ScenarioResult run_hostile(const BootInfo& boot);
ScenarioResult run_blk_bench(const BootInfo& boot);
ScenarioResult run_vsock_bench(const BootInfo& boot);

// The running scenario's name as given on the command line (for messages printed out of line).
const char* scenario_name();

// Prints the PASS or FAIL line (once) and resets the VM.
[[noreturn]] void finish(ScenarioResult result);

}  // namespace testguest
