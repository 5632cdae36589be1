// The fixture of the egress proxy's end-to-end unit tests (egress_proxy_test, socks5_proxy_test):
// a proxy on a Unix socket in a folder of its own, with the tests' resolver table, the loopback-
// admitting address check (or the production one) and the log lines kept.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "egress/proxy/egress_proxy.h"
#include "tests/unit/egress/proxy_test_servers.h"

namespace carapace::egress::testing {

using namespace std::chrono_literals;

inline IpAddress loopback() {
  return IpAddress::v4(127, 0, 0, 1);
}

class EgressProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/carapace-egress-test-" + std::to_string(::getpid()) + "-" +
           std::to_string(counter_++);
    ::mkdir(dir_.c_str(), 0700);
    resolver_.add("allowed.test", {{loopback()}});
    resolver_.add("denied.test", {{loopback()}});
    resolver_.add("other.test", {{loopback()}});
  }
  void TearDown() override {
    proxy_.reset();
    ::rmdir(dir_.c_str());
  }

  // Starts the proxy with `allow`/`deny`; `admit_loopback`: the tests' check (else production).
  void start(std::vector<std::string> allow, std::vector<std::string> deny = {},
             bool admit_loopback = true) {
    auto policy = EgressPolicy::parse(allow, deny);
    ASSERT_TRUE(policy.ok()) << policy.error().message;
    EgressProxyOptions o;
    o.listen_path = dir_ + "/egress.sock";
    o.sandbox = "sb-test";
    o.policy = *policy;
    o.resolve = resolver_.resolver();
    if (admit_loopback) o.check = loopback_admitting_check();
    o.connect_timeout = 500ms;
    o.head_timeout = head_timeout_;
    o.idle_timeout = 5s;
    o.max_connections = max_connections_;
    o.max_head_bytes = max_head_bytes_;
    o.start_closed = start_closed_;
    o.credentials = credentials_;
    if (!ca_file_.empty()) o.ca_file = ca_file_;
    o.log = [this](const std::string& line) {
      std::lock_guard lock(log_mu_);
      log_.push_back(line);
    };
    auto p = EgressProxy::start(std::move(o));
    ASSERT_TRUE(p.ok()) << p.error().describe();
    proxy_ = std::move(*p);
  }
  std::string path() const { return dir_ + "/egress.sock"; }
  std::string log_text() {
    std::lock_guard lock(log_mu_);
    std::string all;
    for (const auto& l : log_)
      all += l + "\n";
    return all;
  }

  static inline int counter_ = 0;
  std::string dir_;
  TableResolver resolver_;
  std::chrono::milliseconds head_timeout_ = 2s;
  size_t max_connections_ = 64;
  size_t max_head_bytes_ = 16 * 1024;
  bool start_closed_ = false;
  ProxyCredentials credentials_;  // what the proxy starts with
  std::string ca_file_;           // "" for the system bundle
  std::mutex log_mu_;
  std::vector<std::string> log_;
  std::unique_ptr<EgressProxy> proxy_;
};

}  // namespace carapace::egress::testing
