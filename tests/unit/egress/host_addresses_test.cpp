// The proxy's list of the host's own addresses: read again once it is older than its maximum age,
// so that an address the host gains while the proxy runs is refused from at most that long after.
#include "egress/proxy/host_addresses.h"

#include <gtest/gtest.h>

#include <chrono>

#include "egress/policy/egress_policy.h"

namespace carapace::egress {
namespace {

using namespace std::chrono_literals;

struct FakeHost {
  HostAddresses::List addresses;
  bool fail = false;
  int reads = 0;
  HostAddresses::Clock::time_point now{};

  HostAddresses::Reader reader() {
    return [this]() -> Result<HostAddresses::List> {
      reads++;
      if (fail) return make_error("getifaddrs: no");
      return addresses;
    };
  }
  HostAddresses::Now clock() {
    return [this] { return now; };
  }
};

TEST(HostAddressesTest, AnAddressTheHostGainsIsRefusedOnceTheListIsOlderThanItsMaxAge) {
  FakeHost host;
  host.addresses = {IpAddress::v4(192, 0, 2, 1)};
  auto h = HostAddresses::create(host.reader(), 1000ms, host.clock());
  ASSERT_TRUE(h.ok());
  auto policy = *EgressPolicy::parse({"10.0.0.0/8:443"}, {});
  auto dest = *parse_destination("10.1.2.3", 443);
  const IpAddress added = IpAddress::v4(10, 1, 2, 3);
  EXPECT_TRUE(check_address(policy, dest, added, *(*h)->current()).allowed);

  host.addresses.push_back(added);
  host.now += 999ms;  // within the bound the list may still be the old one, and is not re-read
  EXPECT_TRUE(check_address(policy, dest, added, *(*h)->current()).allowed);
  EXPECT_EQ(host.reads, 1);

  host.now += 1ms;
  Decision d = check_address(policy, dest, added, *(*h)->current());
  EXPECT_FALSE(d.allowed);
  EXPECT_NE(d.reason.find("host"), std::string::npos) << d.reason;
  EXPECT_EQ(host.reads, 2);
  // Read once per max age, not once per check.
  EXPECT_FALSE(check_address(policy, dest, added, *(*h)->current()).allowed);
  EXPECT_EQ(host.reads, 2);
}

TEST(HostAddressesTest, AFailedReadKeepsTheLastListAndTheNextCheckTriesAgain) {
  FakeHost host;
  host.addresses = {IpAddress::v4(192, 0, 2, 1)};
  auto h = HostAddresses::create(host.reader(), 1000ms, host.clock());
  ASSERT_TRUE(h.ok());
  host.fail = true;
  host.now += 2s;
  EXPECT_EQ(*(*h)->current(), HostAddresses::List{IpAddress::v4(192, 0, 2, 1)});
  EXPECT_EQ(host.reads, 2);
  host.fail = false;
  host.addresses.push_back(IpAddress::v4(192, 0, 2, 2));
  EXPECT_EQ((*h)->current()->size(), 2u);  // not a max age later: at once
  EXPECT_EQ(host.reads, 3);
}

TEST(HostAddressesTest, TheFirstReadFailingIsAnError) {
  FakeHost host;
  host.fail = true;
  EXPECT_FALSE(HostAddresses::create(host.reader(), 1000ms, host.clock()).ok());
}

}  // namespace
}  // namespace carapace::egress
