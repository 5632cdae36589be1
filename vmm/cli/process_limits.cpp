#include "vmm/cli/process_limits.h"

#include <sys/resource.h>

namespace carapace {

void raise_open_file_limit_for_shares(size_t shares) {
  if (shares == 0) return;
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
  lim.rlim_cur = lim.rlim_max;
  (void)::setrlimit(RLIMIT_NOFILE, &lim);
}

}  // namespace carapace
