#include "common/base/loopback.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/base/unique_fd.h"

namespace carapace {

Status bring_up_loopback() {
  UniqueFd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return sys_error("socket for lo");
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(s.get(), SIOCGIFFLAGS, &ifr) != 0) return sys_error("SIOCGIFFLAGS lo");
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
  if (::ioctl(s.get(), SIOCSIFFLAGS, &ifr) != 0) return sys_error("SIOCSIFFLAGS lo");
  // An alias label makes SIOCSIFADDR add an address instead of replacing 127.0.0.1 (netdevice(7)).
  ifreq alias{};
  std::strncpy(alias.ifr_name, "lo:1", IFNAMSIZ - 1);
  auto* sin = reinterpret_cast<sockaddr_in*>(&alias.ifr_addr);
  sin->sin_family = AF_INET;
  sin->sin_addr.s_addr = htonl(0x7f000101);  // 127.0.1.1
  if (::ioctl(s.get(), SIOCSIFADDR, &alias) != 0 && errno != EEXIST)
    return sys_error("SIOCSIFADDR lo:1 127.0.1.1");
  return ok_status();
}

}  // namespace carapace
