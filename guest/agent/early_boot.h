// PID-1 setup of the guest, before the agent serves anything. The root file system is a
// read-only ext4 image shared by every sandbox (root=/dev/vda ro); each sandbox writes to its own
// tmpfs through an overlay:
//   1. devtmpfs on /dev (unless the kernel mounted it), /proc, /sys; console on /dev/console.
//   2. tmpfs on /overlay; overlayfs on /overlay/root with lowerdir=/ and upper and work dirs on
//      the tmpfs; /dev, /proc and /sys moved into it; pivot_root into it; the old root detached.
//   3. tmpfs on /tmp and /dev/shm, devpts on /dev/pts, /dev/fd and /dev/std* links, /work (0755),
//      hostname "sandbox", loopback up.
// The image must provide the empty directories /dev, /proc, /sys, /tmp and /overlay.
#pragma once

#include "common/base/result.h"

namespace carapace::agent {

Status early_boot();

// Makes sure descriptors 0, 1 and 2 are open (on /dev/null if nothing else), so no pipe or
// socket the agent opens later lands on them.
void ensure_std_fds();

}  // namespace carapace::agent
