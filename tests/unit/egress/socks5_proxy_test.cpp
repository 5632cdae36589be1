// SOCKS5 (RFC 1928) on the egress proxy's listener, end to end on loopback: the same decisions,
// dials, log lines, counters, deadlines and live policy cut as HTTP CONNECT, answered with the §6
// reply codes (docs/security.md #38-#41).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <string>
#include <thread>

#include "egress/proxy/egress_proxy.h"
#include "tests/unit/egress/egress_proxy_fixture.h"
#include "tests/unit/egress/proxy_test_servers.h"

namespace carapace::egress {
namespace {

using namespace std::chrono_literals;
using testing::EgressProxyTest;
using testing::LoopbackUpstream;
using Clock = std::chrono::steady_clock;

class EgressSocks5Test : public EgressProxyTest {};

std::string bytes(std::initializer_list<int> b) {
  std::string out;
  for (int v : b)
    out.push_back(static_cast<char>(v));
  return out;
}

// A greeting offering "no authentication" only, and the proxy's answer choosing it.
std::string greeting() {
  return bytes({0x05, 0x01, 0x00});
}
std::string no_auth() {
  return bytes({0x05, 0x00});
}

std::string port_bytes(uint16_t port) {
  return bytes({port >> 8, port & 0xff});
}

std::string domain_request(const std::string& name, uint16_t port) {
  return bytes({0x05, 0x01, 0x00, 0x03, static_cast<int>(name.size())}) + name + port_bytes(port);
}

// The §6 reply with BND 0.0.0.0:0, as the proxy sends every one.
std::string reply(int code) {
  return bytes({0x05, code, 0x00, 0x01, 0, 0, 0, 0, 0, 0});
}

// Reads exactly `n` bytes, or what came before EOF or `timeout`.
std::string read_n(int fd, size_t n, std::chrono::milliseconds timeout = 5s) {
  std::string out;
  auto deadline = Clock::now() + timeout;
  char buf[4096];
  while (out.size() < n) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    ssize_t got = ::recv(fd, buf, std::min(sizeof buf, n - out.size()), 0);
    if (got <= 0) break;
    out.append(buf, static_cast<size_t>(got));
  }
  return out;
}

void send_text(int fd, const std::string& s) {
  ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
}

// A whole SOCKS5 exchange in one write: the greeting, then `request`; what came back up to EOF.
std::string socks_exchange(const std::string& path, const std::string& request,
                           std::chrono::milliseconds timeout = 5s) {
  return testing::exchange(path, greeting() + request, timeout);
}

// Opens a SOCKS5 tunnel to `host`:`port` the way a careful client does, one step at a time.
UniqueFd open_tunnel(const std::string& path, const std::string& host, uint16_t port) {
  UniqueFd c = testing::connect_proxy(path);
  if (!c.valid()) return c;
  std::string hello = greeting();
  ::send(c.get(), hello.data(), hello.size(), MSG_NOSIGNAL);
  if (read_n(c.get(), 2) != no_auth()) return UniqueFd();
  std::string req = domain_request(host, port);
  ::send(c.get(), req.data(), req.size(), MSG_NOSIGNAL);
  if (read_n(c.get(), 10) != reply(0x00)) return UniqueFd();
  return c;
}

TEST_F(EgressSocks5Test, AnAllowedNameTunnelsBytesBothWays) {
  LoopbackUpstream echo(LoopbackUpstream::Mode::kEcho);
  start({"allowed.test"});
  UniqueFd c = testing::connect_proxy(path());
  ASSERT_TRUE(c.valid());
  send_text(c.get(), greeting());
  EXPECT_EQ(read_n(c.get(), 2), no_auth());
  // The name as a client may write it: the policy normalises it as it does a CONNECT host.
  send_text(c.get(), domain_request("Allowed.Test.", echo.port()));
  EXPECT_EQ(read_n(c.get(), 10), reply(0x00));
  send_text(c.get(), "ping");
  EXPECT_EQ(read_n(c.get(), 4), "ping");
  send_text(c.get(), "pong");
  ::shutdown(c.get(), SHUT_WR);
  EXPECT_EQ(testing::read_until_eof(c.get(), 5s), "pong");
  c.reset();
  for (int i = 0; i < 100 && proxy_->stats().active > 0; i++)
    std::this_thread::sleep_for(10ms);
  EgressStats s = proxy_->stats();
  EXPECT_EQ(s.allowed, 1u);
  EXPECT_EQ(s.bytes_up, 8u);
  EXPECT_EQ(s.bytes_down, 8u);
  EXPECT_EQ(echo.connections(), 1);
  std::string log = log_text();
  for (const char* field :
       {"\"protocol\":\"socks5\"", "\"decision\":\"allow\"", "\"method\":\"CONNECT\"",
        "\"host\":\"Allowed.Test.\"", "\"address\":\"127.0.0.1\"", "\"rule\":\"allowed.test\"",
        "\"reply\":0", "\"bytes_up\":8", "\"end\":\"closed\"", "\"sandbox\":\"sb-test\""})
    EXPECT_NE(log.find(field), std::string::npos) << field << " in " << log;
}

TEST_F(EgressSocks5Test, SecurityCheck41_BytesBehindTheRequestAreTunnelData) {
  // A client that does not wait for either answer: greeting, request and the first tunnel bytes
  // in one write. The greeting's and the request's bytes never reach the upstream; the rest does.
  LoopbackUpstream echo(LoopbackUpstream::Mode::kEcho);
  start({"allowed.test"});
  UniqueFd c = testing::connect_proxy(path());
  send_text(c.get(), greeting() + domain_request("allowed.test", echo.port()) + "hello");
  EXPECT_EQ(read_n(c.get(), 2 + 10 + 5), no_auth() + reply(0x00) + "hello");
}

TEST_F(EgressSocks5Test, ADeniedNameIs02AndLogged) {
  LoopbackUpstream echo(LoopbackUpstream::Mode::kEcho);
  start({"*.test"}, {"denied.test"});
  EXPECT_EQ(socks_exchange(path(), domain_request("denied.test", echo.port())),
            no_auth() + reply(0x02));
  EXPECT_EQ(socks_exchange(path(), domain_request("pypi.org", 443)), no_auth() + reply(0x02));
  EXPECT_EQ(echo.connections(), 0);
  EXPECT_EQ(resolver_.lookups("denied.test"), 0);  // refused before any lookup
  EXPECT_EQ(proxy_->stats().denied_rule, 2u);
  std::string log = log_text();
  for (const char* field :
       {"\"protocol\":\"socks5\"", "\"decision\":\"deny\"", "\"reply\":2",
        "\"host\":\"denied.test\"", "\"rule\":\"denied.test\"", "no allow rule"})
    EXPECT_NE(log.find(field), std::string::npos) << field << " in " << log;
}

TEST_F(EgressSocks5Test, IpLiteralsNeedANetworkRule) {
  LoopbackUpstream echo(LoopbackUpstream::Mode::kEcho);
  start({"*"});
  const std::string v4 = bytes({0x05, 0x01, 0x00, 0x01, 127, 0, 0, 1}) + port_bytes(echo.port());
  const std::string v6 =
      bytes({0x05, 0x01, 0x00, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}) +
      port_bytes(echo.port());
  // A literal written as a domain name is still a literal.
  for (const std::string& req : {v4, v6, domain_request("127.0.0.1", echo.port())})
    EXPECT_EQ(socks_exchange(path(), req), no_auth() + reply(0x02));
  // Forms a resolver would read as 127.0.0.1 are neither literals nor names.
  for (std::string host : {"0x7f.0.0.1", "2130706433", "127.1"})
    EXPECT_EQ(socks_exchange(path(), domain_request(host, echo.port())), no_auth() + reply(0x01))
        << host;
  EXPECT_EQ(echo.connections(), 0);
  EXPECT_EQ(proxy_->stats().denied_rule, 3u);
  EXPECT_NE(log_text().find("literal"), std::string::npos) << log_text();

  // And with a network rule, the IPv4 literal goes through (the tests' check admits loopback).
  proxy_->set_policy(*EgressPolicy::parse({"127.0.0.0/8"}, {}));
  std::string got = socks_exchange(path(), v4 + "x", 1s);
  EXPECT_EQ(got, no_auth() + reply(0x00) + "x");
}

TEST_F(EgressSocks5Test, ANameThatResolvesToLoopbackIsRefusedAtTheAddressStage) {
  LoopbackUpstream echo(LoopbackUpstream::Mode::kEcho);
  start({"*.test"}, {}, /*admit_loopback=*/false);
  EXPECT_EQ(socks_exchange(path(), domain_request("allowed.test", echo.port())),
            no_auth() + reply(0x02));
  EXPECT_EQ(echo.connections(), 0);
  EXPECT_EQ(proxy_->stats().denied_address, 1u);
  std::string log = log_text();
  EXPECT_NE(log.find("\"address\":\"127.0.0.1\""), std::string::npos) << log;
  EXPECT_NE(log.find("loopback"), std::string::npos) << log;
}

TEST_F(EgressSocks5Test, DialFailuresGetTheirReplyCodes) {
  testing::UnansweredPort silent;
  start({"*.test"});
  // A name that does not resolve: host unreachable.
  EXPECT_EQ(socks_exchange(path(), domain_request("nowhere.test", 443)), no_auth() + reply(0x04));
  // Nothing listening: connection refused.
  EXPECT_EQ(socks_exchange(path(), domain_request("allowed.test", testing::closed_loopback_port())),
            no_auth() + reply(0x05));
  // No answer within the connect timeout (500 ms): TTL expired.
  auto t0 = Clock::now();
  EXPECT_EQ(socks_exchange(path(), domain_request("allowed.test", silent.port())),
            no_auth() + reply(0x06));
  EXPECT_LT(Clock::now() - t0, 3s);
  EXPECT_EQ(proxy_->stats().upstream_failures, 3u);
  EXPECT_NE(log_text().find("cannot resolve nowhere.test"), std::string::npos) << log_text();
}

TEST_F(EgressSocks5Test, SecurityCheck41_BadNegotiationsGetTheirAnswerAndAClose) {
  head_timeout_ = 10s;  // every answer below comes at once, not at the deadline
  start({"*"});
  struct Case {
    std::string sent;
    std::string answer;
  };
  const std::string bad_atyp = bytes({0x05, 0x01, 0x00, 0x02});
  for (const Case& c :
       {Case{bytes({0x05, 0x00}), bytes({0x05, 0xff})},                   // NMETHODS 0
        Case{bytes({0x05, 0x01, 0x02}), bytes({0x05, 0xff})},             // only username/password
        Case{greeting() + bytes({0x05, 0x02}), no_auth() + reply(0x07)},  // BIND
        Case{greeting() + bytes({0x05, 0x03}), no_auth() + reply(0x07)},  // UDP ASSOCIATE
        Case{greeting() + bad_atyp, no_auth() + reply(0x08)},
        Case{greeting() + bytes({0x05, 0x01, 0x01}), no_auth() + reply(0x01)},  // RSV 1
        Case{greeting() + bytes({0x05, 0x01, 0x00, 0x03, 0x00}), no_auth() + reply(0x01)},
        Case{greeting() + bytes({0x04, 0x01}), no_auth() + reply(0x01)},  // VER 4 in the request
        Case{greeting() + domain_request("bad_name!", 80), no_auth() + reply(0x01)}}) {
    auto t0 = Clock::now();
    EXPECT_EQ(testing::exchange(path(), c.sent), c.answer);
    EXPECT_LT(Clock::now() - t0, 3s) << "waited for more instead of refusing";
  }
  EXPECT_EQ(proxy_->stats().bad_requests, 9u);
  EXPECT_EQ(proxy_->stats().allowed, 0u);
  std::string log = log_text();
  for (const char* words : {"offers no method", "BIND", "UDP ASSOCIATE", "address type",
                            "reserved byte", "domain name is empty", "VER 4"})
    EXPECT_NE(log.find(words), std::string::npos) << words << " in " << log;
}

TEST_F(EgressSocks5Test, SecurityCheck41_ASlowSocksClientIsCutAtTheHeadTimeout) {
  head_timeout_ = 300ms;
  start({"*"});
  // In the greeting: nothing to answer, the connection is closed.
  UniqueFd a = testing::connect_proxy(path());
  send_text(a.get(), bytes({0x05, 0x02, 0x00}));
  auto t0 = Clock::now();
  EXPECT_EQ(testing::read_until_eof(a.get(), 5s), "");
  EXPECT_LT(Clock::now() - t0, 3s);
  // Greeting answered, the request trickled: general failure at the same deadline, which counts
  // from the first byte, not from the answer.
  UniqueFd b = testing::connect_proxy(path());
  t0 = Clock::now();
  send_text(b.get(), greeting());
  EXPECT_EQ(read_n(b.get(), 2), no_auth());
  send_text(b.get(), bytes({0x05, 0x01, 0x00, 0x03, 0x0a}) + "allo");
  EXPECT_EQ(testing::read_until_eof(b.get(), 5s), reply(0x01));
  auto took = Clock::now() - t0;
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 3s);
  EXPECT_EQ(proxy_->stats().bad_requests, 2u);
  EXPECT_NE(log_text().find("no complete SOCKS5 negotiation in time"), std::string::npos);
}

TEST_F(EgressSocks5Test, SecurityCheck41_TheNegotiationIsBoundByMaxHeadBytes) {
  max_head_bytes_ = 16;
  start({"*.test"});
  // Greeting (3) and a request for a 20-byte name (27): past 16 bytes in all.
  EXPECT_EQ(socks_exchange(path(), domain_request("twenty-bytes-aa.test", 80)),
            no_auth() + reply(0x01));
  EXPECT_NE(log_text().find("SOCKS5 negotiation over 16 bytes"), std::string::npos) << log_text();
  EXPECT_EQ(resolver_.lookups("twenty-bytes-aa.test"), 0);
}

TEST_F(EgressSocks5Test, ANewPolicyCutsSocks5TunnelsItDenies) {
  LoopbackUpstream echo(LoopbackUpstream::Mode::kEcho);
  start({"allowed.test", "other.test"});
  UniqueFd kept = open_tunnel(path(), "other.test", echo.port());
  UniqueFd cut = open_tunnel(path(), "allowed.test", echo.port());
  ASSERT_TRUE(kept.valid() && cut.valid());
  proxy_->set_policy(*EgressPolicy::parse({"other.test"}, {}));
  EXPECT_EQ(testing::read_until_eof(cut.get(), 3s), "");  // EOF, promptly
  send_text(kept.get(), "still");
  EXPECT_EQ(read_n(kept.get(), 5), "still");
  EXPECT_EQ(socks_exchange(path(), domain_request("allowed.test", echo.port())),
            no_auth() + reply(0x02));
  EXPECT_NE(log_text().find("\"end\":\"stopped\""), std::string::npos) << log_text();
}

TEST_F(EgressSocks5Test, HttpStillWorksOnTheSameListener) {
  LoopbackUpstream echo(LoopbackUpstream::Mode::kEcho);
  start({"allowed.test"});
  std::string a = "allowed.test:" + std::to_string(echo.port());
  UniqueFd c = testing::connect_proxy(path());
  send_text(c.get(), "CONNECT " + a + " HTTP/1.1\r\n\r\nz");
  ::shutdown(c.get(), SHUT_WR);  // the tunnel ends, and its line is written, once the echo's does
  EXPECT_EQ(testing::read_until_eof(c.get(), 5s), "HTTP/1.1 200 Connection established\r\n\r\nz");
  for (int i = 0; i < 100 && proxy_->stats().active > 0; i++)
    std::this_thread::sleep_for(10ms);
  EXPECT_NE(log_text().find("\"protocol\":\"http\""), std::string::npos) << log_text();
}

}  // namespace
}  // namespace carapace::egress
