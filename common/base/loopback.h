// The loopback of a machine or network namespace with nothing else in it: a microVM's (no NIC)
// and a process sandbox's (its own namespace). Shared by the guest agent and the sandbox runtime.
#pragma once

#include "common/base/result.h"

namespace carapace {

// Brings `lo` up and gives it a second address, 127.0.1.1 (label "lo:1"; /etc/hosts names it
// after the hostname, as Debian does). Why the second address: getaddrinfo with AI_ADDRCONFIG
// -- which getent ahosts and many runtimes ask for -- returns no IPv4 answer at all on a machine
// whose only IPv4 address is 127.0.0.1 (glibc counts every other one, on loopback too), and the
// egress transparent mode's stand-in addresses must resolve for such programs. Needs
// CAP_NET_ADMIN over the namespace. An address that is already there is not an error.
Status bring_up_loopback();

}  // namespace carapace
