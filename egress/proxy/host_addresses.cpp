#include "egress/proxy/host_addresses.h"

namespace carapace::egress {

HostAddresses::HostAddresses(Reader read, std::chrono::milliseconds max_age, Now now)
    : read_(std::move(read)), max_age_(max_age), now_(std::move(now)) {}

Result<std::shared_ptr<HostAddresses>> HostAddresses::create(Reader read,
                                                             std::chrono::milliseconds max_age,
                                                             Now now) {
  std::shared_ptr<HostAddresses> h(new HostAddresses(std::move(read), max_age, std::move(now)));
  h->read_at_ = h->now_();
  h->list_ = std::make_shared<const List>(TRY(h->read_()));
  return h;
}

std::shared_ptr<const HostAddresses::List> HostAddresses::current() {
  std::lock_guard lock(mu_);
  const Clock::time_point t = now_();
  if (t - read_at_ >= max_age_) {
    auto fresh = read_();
    if (fresh.ok()) {
      list_ = std::make_shared<const List>(std::move(*fresh));
      read_at_ = t;
    }
  }
  return list_;
}

}  // namespace carapace::egress
