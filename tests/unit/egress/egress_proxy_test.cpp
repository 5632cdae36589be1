// The egress proxy alone, on loopback: what it lets through, what it refuses and why, resolve-
// then-dial against rebinding, live policy changes, and the caps a hostile client meets
// (docs/security.md: egress proxy).
#include "egress/proxy/egress_proxy.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/http/chunked.h"
#include "tests/unit/egress/egress_proxy_fixture.h"
#include "tests/unit/egress/proxy_test_servers.h"

namespace carapace::egress {
namespace {

using namespace std::chrono_literals;
using testing::EgressProxyTest;
using testing::exchange;
using testing::loopback;
using testing::LoopbackUpstream;

std::string connect_line(const std::string& host, uint16_t port) {
  std::string a = host + ":" + std::to_string(port);
  return "CONNECT " + a + " HTTP/1.1\r\nHost: " + a + "\r\n\r\n";
}

TEST_F(EgressProxyTest, ConnectToAnAllowedNameTunnelsBytesBothWays) {
  LoopbackUpstream echo(LoopbackUpstream::Mode::kEcho);
  start({"allowed.test"});
  UniqueFd c = testing::connect_proxy(path());
  ASSERT_TRUE(c.valid());
  // The first bytes of the tunnel ride right behind the head, as TLS clients send them.
  std::string req = connect_line("Allowed.Test.", echo.port()) + "ping";
  ::send(c.get(), req.data(), req.size(), MSG_NOSIGNAL);
  std::string want = "HTTP/1.1 200 Connection established\r\n\r\nping";
  std::string got;
  char buf[256];
  while (got.size() < want.size()) {
    ssize_t n = ::recv(c.get(), buf, sizeof buf, 0);
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(got, want);
  ::send(c.get(), "pong", 4, MSG_NOSIGNAL);
  ::shutdown(c.get(), SHUT_WR);
  EXPECT_EQ(testing::read_until_eof(c.get(), 5s), "pong");
  c.reset();
  for (int i = 0; i < 100 && proxy_->stats().active > 0; i++)
    std::this_thread::sleep_for(10ms);
  EgressStats s = proxy_->stats();
  EXPECT_EQ(s.allowed, 1u);
  EXPECT_EQ(s.bytes_up, 8u);
  EXPECT_EQ(s.bytes_down, 8u);
  std::string log = log_text();
  EXPECT_NE(log.find("\"decision\":\"allow\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"host\":\"Allowed.Test.\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"address\":\"127.0.0.1\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"rule\":\"allowed.test\""), std::string::npos) << log;
  EXPECT_NE(log.find("\"bytes_up\":8"), std::string::npos) << log;
  EXPECT_NE(log.find("\"sandbox\":\"sb-test\""), std::string::npos) << log;
}

// Started closed (the program confines itself first): a client waits in the backlog, unread,
// until the proxy is opened, then is served as usual.
TEST_F(EgressProxyTest, AProxyStartedClosedReadsNothingUntilOpened) {
  start_closed_ = true;
  start({"allowed.test"});
  UniqueFd c = testing::connect_proxy(path());
  ASSERT_TRUE(c.valid());
  const std::string req = connect_line("denied.test", 1);
  ::send(c.get(), req.data(), req.size(), MSG_NOSIGNAL);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(proxy_->stats().connections, 0u);
  char buf[64];
  EXPECT_EQ(::recv(c.get(), buf, sizeof buf, MSG_DONTWAIT), -1);  // no answer yet
  proxy_->open_for_clients();
  const std::string answer = testing::read_until_eof(c.get(), 5s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 403", 0), 0u) << answer;
  EXPECT_EQ(proxy_->stats().connections, 1u);
}

TEST_F(EgressProxyTest, PlainHttpIsSentOnInOriginFormWithOneRequestPerConnection) {
  LoopbackUpstream web(LoopbackUpstream::Mode::kHttp);
  start({"allowed.test"});
  std::string host = "allowed.test:" + std::to_string(web.port());
  // A second, pipelined request for another host must not ride the first one's connection.
  std::string got = exchange(path(), "GET http://" + host +
                                         "/simple/pip/?x=1 HTTP/1.1\r\nHost: evil.test\r\n"
                                         "Proxy-Connection: keep-alive\r\n\r\n"
                                         "GET http://other.test/ HTTP/1.1\r\n\r\n");
  EXPECT_EQ(got, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
  auto reqs = web.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0],
            "GET /simple/pip/?x=1 HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(web.connections(), 1);
}

TEST_F(EgressProxyTest, RequestBodiesAreSentOnInTheirFraming) {
  LoopbackUpstream web(LoopbackUpstream::Mode::kHttp);
  start({"allowed.test"});
  std::string url = "http://allowed.test:" + std::to_string(web.port()) + "/up";
  EXPECT_NE(exchange(path(), "POST " + url + " HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde")
                .find("200 OK"),
            std::string::npos);
  EXPECT_NE(exchange(path(), "PUT " + url +
                                 " HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 "3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n")
                .find("200 OK"),
            std::string::npos);
  auto reqs = web.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_NE(reqs[0].find("\r\n\r\nabcde"), std::string::npos) << reqs[0];
  EXPECT_NE(reqs[1].find("Transfer-Encoding: chunked\r\n"), std::string::npos) << reqs[1];
  // Re-framed from the decoded bytes (chunk boundaries carry no meaning, RFC 9112 7.1; the
  // extension is dropped): the upstream decodes exactly the body that was sent.
  http::ChunkedDecoder decoder(1 << 20);
  std::string decoded;
  size_t consumed = 0;
  std::string_view chunked = std::string_view(reqs[1]).substr(reqs[1].find("\r\n\r\n") + 4);
  EXPECT_EQ(decoder.feed(chunked, decoded, &consumed), http::ChunkedDecoder::Status::kDone);
  EXPECT_EQ(decoded, "abcde");
  EXPECT_EQ(consumed, chunked.size());
  EXPECT_EQ(reqs[1].find("ext"), std::string::npos);
  // A malformed chunked body is refused, never passed on as it is.
  EXPECT_NE(exchange(path(), "PUT " + url + " HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
                .find("400"),
            std::string::npos);
}

TEST_F(EgressProxyTest, DenyRulesAndMissingAllowRulesAre403WithTheReason) {
  LoopbackUpstream echo(LoopbackUpstream::Mode::kEcho);
  start({"*.test"}, {"denied.test"});
  std::string denied = exchange(path(), connect_line("denied.test", echo.port()));
  EXPECT_EQ(denied.rfind("HTTP/1.1 403 Forbidden\r\n", 0), 0u) << denied;
  EXPECT_NE(denied.find("X-Carapace-Egress: denied by 'denied.test'"), std::string::npos) << denied;
  std::string unlisted = exchange(path(), connect_line("pypi.org", 443));
  EXPECT_EQ(unlisted.rfind("HTTP/1.1 403", 0), 0u) << unlisted;
  EXPECT_NE(unlisted.find("no allow rule"), std::string::npos) << unlisted;
  EXPECT_EQ(echo.connections(), 0);
  EXPECT_EQ(resolver_.lookups("denied.test"), 0);  // refused before any lookup
  EXPECT_EQ(proxy_->stats().denied_rule, 2u);
  EXPECT_NE(log_text().find("\"decision\":\"deny\""), std::string::npos);
}

TEST_F(EgressProxyTest, IpLiteralsNeedANetworkRule) {
  LoopbackUpstream echo(LoopbackUpstream::Mode::kEcho);
  start({"*"});
  for (std::string host : {"127.0.0.1", "[::1]", "203.0.113.7"}) {
    std::string r = exchange(path(), connect_line(host, echo.port()));
    EXPECT_EQ(r.rfind("HTTP/1.1 403", 0), 0u) << host << ": " << r;
  }
  // Forms a resolver would read as 127.0.0.1 are neither literals nor names.
  for (std::string host : {"0x7f.0.0.1", "2130706433", "127.1", "0177.0.0.1"}) {
    std::string r = exchange(path(), connect_line(host, echo.port()));
    EXPECT_EQ(r.rfind("HTTP/1.1 4", 0), 0u) << host << ": " << r;
    EXPECT_EQ(r.find("HTTP/1.1 200"), std::string::npos) << host;
  }
  EXPECT_EQ(echo.connections(), 0);
}

TEST_F(EgressProxyTest, ANameThatResolvesToAnInternalAddressIsRefused) {
  LoopbackUpstream echo(LoopbackUpstream::Mode::kEcho);
  resolver_.add("metadata.test", {{IpAddress::v4(169, 254, 169, 254)}});
  resolver_.add("mapped.test", {{*IpAddress::parse("::ffff:127.0.0.1")}});
  resolver_.add("private.test", {{IpAddress::v4(10, 1, 2, 3)}});
  resolver_.add("mixed.test", {{IpAddress::v4(203, 0, 113, 9), loopback()}});
  start({"*.test"}, {}, /*admit_loopback=*/false);
  struct Case {
    const char* host;
    const char* reason;
  };
  for (Case c : {Case{"allowed.test", "loopback"}, Case{"metadata.test", "link-local"},
                 Case{"mapped.test", "loopback"}, Case{"private.test", "private"},
                 Case{"mixed.test", "loopback"}}) {
    std::string r = exchange(path(), connect_line(c.host, echo.port()));
    EXPECT_EQ(r.rfind("HTTP/1.1 403", 0), 0u) << c.host << ": " << r;
    EXPECT_NE(r.find(c.reason), std::string::npos) << c.host << ": " << r;
  }
  EXPECT_EQ(echo.connections(), 0);
  EXPECT_EQ(proxy_->stats().denied_address, 5u);
  EXPECT_NE(log_text().find("\"address\":\"169.254.169.254\""), std::string::npos);
}

TEST_F(EgressProxyTest, PrivateAddressesPassOnlyWithANetworkAllowRule) {
  resolver_.add("mirror.test", {{IpAddress::v4(10, 99, 0, 1)}});
  start({"mirror.test", "10.99.0.0/16:9"}, {}, /*admit_loopback=*/false);
  // Allowed through to the dial: whether 10.99.0.1:9 answers depends on this host's network
  // (200, 502 or 504), but the policy let it through.
  std::string r = exchange(path(), connect_line("mirror.test", 9), 1500ms);
  EXPECT_EQ(r.find("HTTP/1.1 403"), std::string::npos) << r;
  EXPECT_TRUE(r.rfind("HTTP/1.1 200", 0) == 0 || r.rfind("HTTP/1.1 502", 0) == 0 ||
              r.rfind("HTTP/1.1 504", 0) == 0)
      << r;
  std::string other_port = exchange(path(), connect_line("mirror.test", 10));
  EXPECT_EQ(other_port.rfind("HTTP/1.1 403", 0), 0u) << other_port;
}

TEST_F(EgressProxyTest, RebindingGetsOneLookupAndNoSecondChance) {
  LoopbackUpstream echo(LoopbackUpstream::Mode::kEcho);
  // The first answer is public (and does not answer: TEST-NET-3), the next ones loopback.
  resolver_.add("rebind.test", {{IpAddress::v4(203, 0, 113, 9)}, {loopback()}});
  start({"rebind.test"}, {}, /*admit_loopback=*/false);
  std::string first = exchange(path(), connect_line("rebind.test", echo.port()));
  EXPECT_TRUE(first.rfind("HTTP/1.1 502", 0) == 0 || first.rfind("HTTP/1.1 504", 0) == 0) << first;
  EXPECT_EQ(resolver_.lookups("rebind.test"), 1);
  std::string second = exchange(path(), connect_line("rebind.test", echo.port()));
  EXPECT_EQ(second.rfind("HTTP/1.1 403", 0), 0u) << second;
  EXPECT_EQ(resolver_.lookups("rebind.test"), 2);
  EXPECT_EQ(echo.connections(), 0);
}

TEST_F(EgressProxyTest, ANewPolicyCutsTunnelsItDenies) {
  LoopbackUpstream echo(LoopbackUpstream::Mode::kEcho);
  start({"allowed.test", "other.test"});
  UniqueFd kept = testing::connect_proxy(path());
  UniqueFd cut = testing::connect_proxy(path());
  for (auto [fd, host] :
       {std::pair{kept.get(), "other.test"}, std::pair{cut.get(), "allowed.test"}}) {
    std::string req = connect_line(host, echo.port());
    ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    char buf[64];
    ASSERT_GT(::recv(fd, buf, sizeof buf, 0), 0);
  }
  for (int i = 0; i < 100 && proxy_->stats().active < 2; i++)
    std::this_thread::sleep_for(10ms);
  auto next = EgressPolicy::parse({"other.test"}, {});
  ASSERT_TRUE(next.ok());
  proxy_->set_policy(*next);
  EXPECT_EQ(testing::read_until_eof(cut.get(), 3s), "");  // EOF, promptly
  ::send(kept.get(), "still", 5, MSG_NOSIGNAL);
  char buf[16];
  ASSERT_EQ(::recv(kept.get(), buf, sizeof buf, 0), 5);
  EXPECT_EQ(std::string(buf, 5), "still");
  std::string again = exchange(path(), connect_line("allowed.test", echo.port()));
  EXPECT_EQ(again.rfind("HTTP/1.1 403", 0), 0u) << again;
  EXPECT_EQ(proxy_->policy().allow_texts(), std::vector<std::string>{"other.test"});
}

TEST_F(EgressProxyTest, BadRequestsGetAClearAnswer) {
  start({"*"});
  struct Case {
    std::string request;
    std::string answer;
  };
  for (const Case& c : {Case{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400"},
                        Case{"GET https://x/ HTTP/1.1\r\n\r\n", "needs CONNECT"},
                        Case{"GET http://u@x/ HTTP/1.1\r\n\r\n", "user information"},
                        Case{"BREW http://x/ HTTP/1.1\r\n\r\n", "HTTP/1.1 501"},
                        Case{"CONNECT x:1 HTTP/2.0\r\n\r\n", "HTTP/1.1 400"},
                        Case{"CONNECT bad_name!:1 HTTP/1.1\r\n\r\n", "HTTP/1.1 400"},
                        Case{"GET http://x/ HTTP/1.1\nHost: x\n\n", "HTTP/1.1 400"}}) {
    std::string r = exchange(path(), c.request);
    EXPECT_NE(r.find(c.answer), std::string::npos) << c.request << " -> " << r;
  }
  std::string huge = "GET http://x/ HTTP/1.1\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n";
  EXPECT_NE(exchange(path(), huge).find("HTTP/1.1 431"), std::string::npos);
  EXPECT_EQ(proxy_->stats().bad_requests, 8u);
}

TEST_F(EgressProxyTest, ASlowHeadIsCutAtTheHeadTimeout) {
  head_timeout_ = 300ms;
  start({"*"});
  UniqueFd c = testing::connect_proxy(path());
  ::send(c.get(), "CONNECT allo", 12, MSG_NOSIGNAL);
  auto t0 = std::chrono::steady_clock::now();
  std::string r = testing::read_until_eof(c.get(), 5s);
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.rfind("HTTP/1.1 408", 0), 0u) << r;
  EXPECT_LT(took, 3s);
}

TEST_F(EgressProxyTest, ConnectionsPastTheCapGet503) {
  max_connections_ = 2;
  start({"*"});
  UniqueFd a = testing::connect_proxy(path());
  UniqueFd b = testing::connect_proxy(path());
  for (int i = 0; i < 100 && proxy_->stats().active < 2; i++)
    std::this_thread::sleep_for(10ms);
  ASSERT_EQ(proxy_->stats().active, 2u);
  std::string r = exchange(path(), "");
  EXPECT_EQ(r.rfind("HTTP/1.1 503", 0), 0u) << r;
  EXPECT_EQ(proxy_->stats().over_capacity, 1u);
}

// Each worker serves the connection it accepted itself: while every running worker holds a
// tunnel, another must already be waiting, or the next client would wait for a tunnel's end.
TEST_F(EgressProxyTest, EachHeldTunnelLeavesAWorkerWaitingForTheNext) {
  LoopbackUpstream echo(LoopbackUpstream::Mode::kEcho);
  start({"allowed.test"});
  const std::string established = "HTTP/1.1 200 Connection established\r\n\r\n";
  // Reads `want.size()` bytes within a second.
  auto read_exactly = [](int fd, const std::string& want) {
    std::string got;
    char buf[256];
    while (got.size() < want.size()) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 1000) != 1) return got + " (timed out)";
      ssize_t n = ::recv(fd, buf, std::min(sizeof buf, want.size() - got.size()), 0);
      if (n <= 0) return got + " (closed)";
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  };
  std::vector<UniqueFd> held;
  for (int i = 0; i < 6; i++) {
    UniqueFd c = testing::connect_proxy(path());
    ASSERT_TRUE(c.valid());
    std::string req = connect_line("allowed.test", echo.port());
    ::send(c.get(), req.data(), req.size(), MSG_NOSIGNAL);
    ASSERT_EQ(read_exactly(c.get(), established), established) << "tunnel " << i;
    held.push_back(std::move(c));
  }
  EXPECT_EQ(proxy_->stats().active, 6u);
  for (size_t i = 0; i < held.size(); i++) {
    std::string msg = "ping " + std::to_string(i);
    ::send(held[i].get(), msg.data(), msg.size(), MSG_NOSIGNAL);
    EXPECT_EQ(read_exactly(held[i].get(), msg), msg);
  }
  held.clear();
  for (int i = 0; i < 100 && proxy_->stats().active > 0; i++)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(proxy_->stats().active, 0u);
  EXPECT_EQ(proxy_->stats().allowed, 6u);
  // The workers those tunnels freed wait again: the next connection is served as the first was.
  UniqueFd c = testing::connect_proxy(path());
  std::string req = connect_line("allowed.test", echo.port());
  ::send(c.get(), req.data(), req.size(), MSG_NOSIGNAL);
  EXPECT_EQ(read_exactly(c.get(), established), established);
}

TEST_F(EgressProxyTest, StopCutsOpenTunnelsAndRemovesTheSocket) {
  LoopbackUpstream echo(LoopbackUpstream::Mode::kEcho);
  start({"allowed.test"});
  UniqueFd c = testing::connect_proxy(path());
  std::string req = connect_line("allowed.test", echo.port());
  ::send(c.get(), req.data(), req.size(), MSG_NOSIGNAL);
  char buf[64];
  ASSERT_GT(::recv(c.get(), buf, sizeof buf, 0), 0);
  auto t0 = std::chrono::steady_clock::now();
  proxy_->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(testing::read_until_eof(c.get(), 2s), "");
  EXPECT_NE(::access(path().c_str(), F_OK), 0);
  EXPECT_NE(log_text().find("\"end\":\"stopped\""), std::string::npos);
}

}  // namespace
}  // namespace carapace::egress
