// Process-wide limits the monitor's commands adjust for the devices they run.
#pragma once

#include <cstddef>

namespace carapace {

// A virtio-fs share holds one O_PATH descriptor per inode the guest keeps looked up (up to the
// device's max_inodes), so a VM with shares raises its RLIMIT_NOFILE to cover every share's
// table: the hard limit too where it may (root), else the soft limit to the hard one (what its
// jail allows). The default soft limit of 1,024 (and a hard one of 4,096) would make a guest's
// 1,000th create EMFILE long before the share's own bound. A failure leaves the limit as it
// was (the bound then just comes sooner).
void raise_open_file_limit_for_shares(size_t shares);

}  // namespace carapace
