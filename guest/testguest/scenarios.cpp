#include "guest/testguest/scenario.h"

#include "guest/testguest/text.h"

namespace testguest {
namespace {

constexpr Scenario kScenarios[] = {
    {"boot-info", run_boot_info},
    {"serial", run_serial},
    {"serial-flood", run_serial_flood},
    {"memory", run_memory},
    {"timer", run_timer},
    {"smp", run_smp},
    {"fault", run_fault},
    {"panic", run_panic},
    {"rng", run_rng},
    {"blk", run_blk},
    {"net", run_net},
    {"vsock", run_vsock},
    {"fs", run_fs},
    {"hostile", run_hostile},
    {"blk-bench", run_blk_bench},
    {"vsock-bench", run_vsock_bench},
    {"counter", run_counter},
    {"idle", run_idle},
    {"restore-notice", run_restore_notice},
    {"agent-ping", run_agent_ping},
};

}  // namespace

const Scenario* find_scenario(const char* name) {
  for (const Scenario& scenario : kScenarios) {
    if (str_equal(scenario.name, name)) return &scenario;
  }
  return nullptr;
}

}  // namespace testguest
