// What `carapace egress-proxy` gives up once its sockets are bound: root (it runs on as `uid`),
// being dumpable (so another process of that uid cannot open its memory), and every system call
// it has no use for. It faces a sandbox's bytes and the network, so it keeps only what serving
// connections, resolving names and dialling needs: an allowlist enforced by seccomp on every
// thread (SECCOMP_FILTER_FLAG_TSYNC), with open() read-only and sockets of the families the
// resolver and the dialler use. A forbidden call is one line on stderr and SIGSYS.
//
// It is not chrooted: the system resolver reads /etc/hosts, /etc/resolv.conf and nsswitch.conf
// and may load NSS modules at its first lookup. That lookup happens before the filter goes on.
#pragma once

#include <sys/types.h>

#include "common/base/result.h"

namespace carapace::egress {

// Drops to `uid`/`gid` (supplementary groups cleared), sets no_new_privs and not-dumpable, and
// installs the filter on every thread of the process. Fails (and the caller must stop) if any
// step fails; nothing is half-applied that would look confined.
Status confine_proxy(uid_t uid, gid_t gid);

}  // namespace carapace::egress
