#include "vmm/cli/process_limits.h"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>

#include "vmm/devices/fs/fs_config.h"

namespace carapace {

namespace {

// fs.nr_open, the most any process may hold; Linux's default when it cannot be read (a jail has
// no /proc/sys).
rlim_t nr_open() {
  std::ifstream in("/proc/sys/fs/nr_open");
  unsigned long long n = 0;
  return in >> n && n > 0 ? static_cast<rlim_t>(n) : rlim_t{1} << 20;
}

}  // namespace

void raise_open_file_limit_for_shares(size_t shares) {
  if (shares == 0) return;
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  // Enough for every share's inode table and the VMM's own files.
  const rlim_t want =
      std::min<rlim_t>(nr_open(), static_cast<rlim_t>(shares) * FsDeviceConfig{}.max_inodes + 4096);
  if (lim.rlim_max < want) {
    // Raising the hard limit needs CAP_SYS_RESOURCE (root, unjailed); a jailed VMM keeps the
    // limit its jail gave it.
    rlimit raised{want, want};
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) return;
  }
  if (lim.rlim_cur >= lim.rlim_max) return;
  lim.rlim_cur = lim.rlim_max;
  (void)::setrlimit(RLIMIT_NOFILE, &lim);
}

}  // namespace carapace
