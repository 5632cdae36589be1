// This host's own interface addresses, as the proxy's address check uses them (an address of the
// host reaches its services, whatever network rule covers it): read at start and read again by
// the first check that finds the list older than its maximum age, so that an address the host
// gains while the proxy runs is refused from at most that long after.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "common/base/result.h"
#include "egress/policy/ip_address.h"

namespace carapace::egress {

// How stale the proxy's list may be: a check at most this long after a host address appeared
// may still miss it.
inline constexpr std::chrono::milliseconds kHostAddressesMaxAge{1000};

class HostAddresses {
 public:
  using List = std::vector<IpAddress>;
  using Reader = std::function<Result<List>()>;
  using Clock = std::chrono::steady_clock;
  using Now = std::function<Clock::time_point()>;

  // Reads the list once (an error here is the caller's: the proxy does not start without it).
  // `read` is host_interface_addresses in production; tests give their own, and their own clock.
  static Result<std::shared_ptr<HostAddresses>> create(Reader read,
                                                       std::chrono::milliseconds max_age,
                                                       Now now = Clock::now);

  // The list, read again first when it is older than max_age. A read that fails keeps the last
  // list (each address it held is still refused) and the next call tries again.
  std::shared_ptr<const List> current();

 private:
  HostAddresses(Reader read, std::chrono::milliseconds max_age, Now now);

  const Reader read_;
  const std::chrono::milliseconds max_age_;
  const Now now_;
  // Held across a re-read: a check that finds the list stale waits for the new one rather than
  // deciding on the old.
  std::mutex mu_;
  std::shared_ptr<const List> list_;
  Clock::time_point read_at_;
};

}  // namespace carapace::egress
