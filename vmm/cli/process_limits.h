// Process-wide limits the monitor's commands adjust for the devices they run.
#pragma once

#include <cstddef>

namespace carapace {

// A virtio-fs share holds one O_PATH descriptor per inode the guest keeps looked up (up to the
// device's max_inodes), so a VM with shares raises its RLIMIT_NOFILE soft limit to the hard one
// (what its jail allows): the default soft limit of 1024 would make a guest's 1,000th create
// EMFILE long before the share's own bound. A failure leaves the limit as it was (the bound
// then just comes sooner).
void raise_open_file_limit_for_shares(size_t shares);

}  // namespace carapace
