// What the agent does to the guest machine as its PID 1: the clock, the entropy pool, the host
// name, powering off (the loopback is common/base/loopback.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/base/loopback.h"
#include "common/base/result.h"

namespace carapace::agent {

// clock_settime(CLOCK_REALTIME): a restored snapshot wakes up with the clock of the moment it
// was taken.
Status set_wall_clock(int64_t sec, uint32_t nsec);
// RNDADDENTROPY on /dev/random, credited in full: a restored snapshot otherwise shares the RNG
// state of every other clone of the same snapshot.
Status add_entropy(std::string_view bytes);
Status set_hostname(const std::string& name);
// 1..63 characters of [A-Za-z0-9-], not starting or ending with '-'.
bool valid_hostname(std::string_view name);
// Kills every other process, syncs and resets the machine. The guest has no ACPI, so a power
// off would only halt the CPUs; a reset (reboot=k) ends the VM: carapace reports it as a normal
// end, QEMU exits with -no-reboot.
[[noreturn]] void power_off();

}  // namespace carapace::agent
