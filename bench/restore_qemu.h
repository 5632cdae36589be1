// QEMU's restore of the same test guest, for bench/restore: boot it, save it with QMP `migrate`
// to a file, then time `-incoming` from that file until QMP reports the VM running.
#pragma once

#include <string>
#include <vector>

namespace carapace::bench {

struct QemuRestoreResult {
  std::string error;        // empty on success
  std::vector<double> ms;   // exec -> running, one per restore
  double peak_rss_mib = 0;  // of the last restored QEMU
};

// `guest` is the test guest ELF (booted through PVH), `cmdline` its command line, `ready` the
// console text that says the guest reached its idle state.
QemuRestoreResult qemu_restore(const std::string& qemu, const std::string& guest,
                               const std::string& cmdline, const std::string& ready,
                               unsigned mem_mib, int runs, const std::string& workdir);

}  // namespace carapace::bench
