#include "guest/agent/system_ops.h"

#include <fcntl.h>
#include <linux/random.h>
#include <net/if.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <ctime>
#include <vector>

#include "common/base/unique_fd.h"

namespace carapace::agent {

Status set_wall_clock(int64_t sec, uint32_t nsec) {
  timespec ts{static_cast<time_t>(sec), static_cast<long>(nsec)};
  if (::clock_settime(CLOCK_REALTIME, &ts) < 0) return sys_error("clock_settime");
  return {};
}

Status add_entropy(std::string_view bytes) {
  UniqueFd fd(::open("/dev/random", O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return sys_error("open /dev/random");
  // struct rand_pool_info ends in a flexible array of 32-bit words.
  std::vector<uint32_t> buf(2 + (bytes.size() + 3) / 4, 0);
  auto* info = reinterpret_cast<rand_pool_info*>(buf.data());
  info->entropy_count = static_cast<int>(bytes.size() * 8);
  info->buf_size = static_cast<int>(bytes.size());
  std::memcpy(info->buf, bytes.data(), bytes.size());
  if (::ioctl(fd.get(), RNDADDENTROPY, info) < 0) return sys_error("RNDADDENTROPY");
  return {};
}

bool valid_hostname(std::string_view name) {
  if (name.empty() || name.size() > 63 || name.front() == '-' || name.back() == '-') return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
  return true;
}

Status set_hostname(const std::string& name) {
  if (::sethostname(name.data(), name.size()) < 0) return sys_error("sethostname");
  return {};
}

void power_off() {
  ::kill(-1, SIGKILL);  // every process but PID 1 itself
  ::sync();
  ::reboot(RB_AUTOBOOT);
  // Only reachable if reboot failed; PID 1 must not return.
  for (;;)
    ::pause();
}

}  // namespace carapace::agent
