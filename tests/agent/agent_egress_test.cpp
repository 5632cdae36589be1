// The agent's forwarder to the host's egress proxy (op "egress"): on, off and moved; the proxy
// variables every exec then gets; bad upstreams refused; and the whole chain -- Python's urllib
// in an exec, the forwarder, carapace's egress proxy, a loopback upstream -- with the proxy's
// decisions holding (an unlisted name is 403 to the tool in the sandbox).
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <thread>

#include "egress/proxy/egress_proxy.h"
#include "tests/agent/agent_harness.h"
#include "tests/agent/agent_test_util.h"
#include "tests/unit/egress/proxy_test_servers.h"

namespace carapace::testing {
namespace {

using namespace std::chrono_literals;
using egress::testing::connect_loopback;

// A Unix-socket stand-in for the host proxy: echoes every connection.
class UnixEcho {
 public:
  explicit UnixEcho(const std::string& path) : path_(path) {
    fd_ = unix_socket(SOCK_STREAM, path, SocketEnd::kListen);
    if (!fd_.valid()) throw std::runtime_error("unix echo: " + std::string(strerror(errno)));
    thread_ = std::thread([this] {
      for (;;) {
        int c = ::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        connections_++;
        char buf[4096];
        ssize_t n;
        while ((n = ::recv(c, buf, sizeof buf, 0)) > 0)
          ::send(c, buf, static_cast<size_t>(n), MSG_NOSIGNAL);
        ::close(c);
      }
    });
  }
  ~UnixEcho() {
    ::shutdown(fd_.get(), SHUT_RDWR);
    thread_.join();
    ::unlink(path_.c_str());
  }
  int connections() const { return connections_; }

 private:
  std::string path_;
  UniqueFd fd_;
  std::thread thread_;
  std::atomic<int> connections_{0};
};

uint16_t port_of(const std::string& url) {
  return static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
}

class AgentEgressTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(agent_.started()) << agent_.error(); }
  AgentProcess agent_;
};

TEST_F(AgentEgressTest, TheForwarderPassesBytesToTheUpstreamAndExecsGetTheProxyVariables) {
  UnixEcho echo(agent_.dir() + "/egress.sock");
  AgentClient c = agent_.connect();
  auto url = c.set_egress("unix:" + agent_.dir() + "/egress.sock", 0);
  ASSERT_TRUE(url.ok()) << url.error().describe();
  ASSERT_EQ(url->rfind("http://127.0.0.1:", 0), 0u) << *url;
  UniqueFd s = connect_loopback(port_of(*url));
  ASSERT_TRUE(s.valid());
  ::send(s.get(), "through", 7, MSG_NOSIGNAL);
  ::shutdown(s.get(), SHUT_WR);
  EXPECT_EQ(egress::testing::read_until_eof(s.get(), 5s), "through");
  EXPECT_EQ(echo.connections(), 1);

  auto env = run_exec(c, {"sh", "-c", "echo $HTTP_PROXY $https_proxy $ALL_PROXY $NO_PROXY"});
  ASSERT_TRUE(env.ok()) << env.error().describe();
  EXPECT_EQ(env->out, *url + " " + *url + " " + *url + " localhost,127.0.0.1,::1\n");
  AgentExecOptions own;
  own.env = {{"HTTP_PROXY", "http://mine:1"}};
  auto mine = run_exec(c, {"sh", "-c", "echo $HTTP_PROXY $HTTPS_PROXY"}, own);
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(mine->out, "http://mine:1 " + *url + "\n");  // the request's env wins

  auto off = c.set_egress("");
  ASSERT_TRUE(off.ok()) << off.error().describe();
  EXPECT_EQ(*off, "");
  EXPECT_FALSE(connect_loopback(port_of(*url)).valid());  // no listener any more
  auto none = run_exec(c, {"sh", "-c", "echo \"[$HTTP_PROXY$http_proxy]\""});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->out, "[]\n");
}

TEST_F(AgentEgressTest, ANewUpstreamReplacesTheOldOneOnTheSamePort) {
  UnixEcho first(agent_.dir() + "/one.sock");
  UnixEcho second(agent_.dir() + "/two.sock");
  AgentClient c = agent_.connect();
  auto a = c.set_egress("unix:" + agent_.dir() + "/one.sock", 0);
  ASSERT_TRUE(a.ok()) << a.error().describe();
  auto b = c.set_egress("unix:" + agent_.dir() + "/two.sock", port_of(*a));
  ASSERT_TRUE(b.ok()) << b.error().describe();
  EXPECT_EQ(*a, *b);
  UniqueFd s = connect_loopback(port_of(*b));
  ::send(s.get(), "x", 1, MSG_NOSIGNAL);
  ::shutdown(s.get(), SHUT_WR);
  EXPECT_EQ(egress::testing::read_until_eof(s.get(), 5s), "x");
  EXPECT_EQ(first.connections(), 0);
  EXPECT_EQ(second.connections(), 1);
}

TEST_F(AgentEgressTest, BadUpstreamsAreRefused) {
  for (const char* bad : {"tcp:1.2.3.4:80", "unix:relative/path", "vsock:0", "vsock:x", "unix:"}) {
    AgentClient c = agent_.connect();
    auto r = c.set_egress(bad, 0);
    EXPECT_EQ(code_of(r), "bad_request") << bad;
  }
  AgentClient c = agent_.connect();
  nlohmann::json wrong{{"op", "egress"}, {"upstream", 5}};
  ASSERT_TRUE(c.send_request(wrong).ok());
  auto reply = c.read_frame_text();
  ASSERT_TRUE(reply.ok());
  EXPECT_NE(reply->find("bad_request"), std::string::npos) << *reply;
}

// Python's urllib in the sandbox, through the forwarder and carapace's proxy, to a loopback
// upstream: what the policy allows answers, what it does not is a 403 the tool sees.
TEST_F(AgentEgressTest, ToolsInTheSandboxGoThroughTheRealProxy) {
  egress::testing::LoopbackUpstream web(egress::testing::LoopbackUpstream::Mode::kHttp);
  egress::testing::TableResolver resolver;
  resolver.add("allowed.test", {{egress::IpAddress::v4(127, 0, 0, 1)}});
  resolver.add("other.test", {{egress::IpAddress::v4(127, 0, 0, 1)}});
  egress::EgressProxyOptions o;
  o.listen_path = agent_.dir() + "/egress.sock";
  o.policy = *egress::EgressPolicy::parse({"allowed.test"}, {});
  o.resolve = resolver.resolver();
  o.check = egress::testing::loopback_admitting_check();
  o.log = [](const std::string&) {};
  auto proxy = egress::EgressProxy::start(std::move(o));
  ASSERT_TRUE(proxy.ok()) << proxy.error().describe();
  AgentClient c = agent_.connect();
  ASSERT_TRUE(c.set_egress("unix:" + agent_.dir() + "/egress.sock", 0).ok());
  const std::string port = std::to_string(web.port());
  const std::string script =
      "import sys, urllib.request, urllib.error\n"
      "for host in ('allowed.test', 'other.test'):\n"
      "    try:\n"
      "        r = urllib.request.urlopen('http://%s:" +
      port +
      "/pkg' % host, timeout=10)\n"
      "        print(host, r.status, r.read().decode())\n"
      "    except urllib.error.HTTPError as e:\n"
      "        print(host, e.code, e.headers.get('X-Carapace-Egress'))\n";
  auto r = run_exec(c, {"python3", "-c", script});
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->out, "allowed.test 200 hello\nother.test 403 no allow rule matches\n") << r->err;
  auto reqs = web.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].rfind("GET /pkg HTTP/1.1\r\n", 0), 0u) << reqs[0];
}

}  // namespace
}  // namespace carapace::testing
