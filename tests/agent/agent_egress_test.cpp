// The agent's forwarder to the host's egress proxy (op "egress"): on, off and moved; the proxy
// variables every exec then gets; bad upstreams refused; and the whole chain -- Python's urllib
// in an exec, the forwarder, carapace's egress proxy, a loopback upstream -- with the proxy's
// decisions holding (an unlisted name is 403 to the tool in the sandbox).
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <sstream>
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

// The credentials' sentinels reach every exec through the egress op's env; the same settings
// with a new env keep the forwarder and change only what the next execs get; off clears them.
TEST_F(AgentEgressTest, TheEgressEnvReachesExecsAndGoesWithTheForwarder) {
  UnixEcho echo(agent_.dir() + "/egress.sock");
  const std::string up = "unix:" + agent_.dir() + "/egress.sock";
  const std::string sentinel = "carapace-cred-0123456789abcdef0123456789abcdef";
  AgentClient c = agent_.connect();
  auto url = c.set_egress(up, 0, {}, 53, {{"EXAMPLE_TOKEN", sentinel}});
  ASSERT_TRUE(url.ok()) << url.error().describe();
  auto got = run_exec(c, {"sh", "-c", "echo $EXAMPLE_TOKEN"});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->out, sentinel + "\n");
  const uint16_t port = port_of(*url);
  auto same = c.set_egress(up, port, {}, 53, {{"OTHER", "x"}});
  ASSERT_TRUE(same.ok()) << same.error().describe();
  EXPECT_EQ(*same, *url);
  got = run_exec(c, {"sh", "-c", "echo \"[$EXAMPLE_TOKEN][$OTHER]\""});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->out, "[][x]\n");
  for (const nlohmann::json& bad :
       {nlohmann::json{{"1X", "v"}}, nlohmann::json{{"A-B", "v"}}, nlohmann::json{{"A", 5}},
        nlohmann::json{{"A", "line\nbreak"}}, nlohmann::json::array()}) {
    AgentClient raw = agent_.connect();
    ASSERT_TRUE(raw.send_request({{"op", "egress"}, {"upstream", up}, {"env", bad}}).ok());
    auto reply = raw.read_frame_text();
    ASSERT_TRUE(reply.ok());
    EXPECT_NE(reply->find("bad_request"), std::string::npos) << bad.dump() << " " << *reply;
  }
  ASSERT_TRUE(agent_.connect().set_egress("").ok());
  got = run_exec(c, {"sh", "-c", "echo \"[$OTHER]\""});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->out, "[]\n");
}

// The egress proxy's CA (given with credentials): written with a bundle of the system CAs, and
// every exec's TLS stacks pointed at them; a later egress op without it removes both, and so
// does turning egress off.
TEST_F(AgentEgressTest, TheProxysCaIsTrustedByExecsOnlyWhileGiven) {
  UnixEcho echo(agent_.dir() + "/egress.sock");
  const std::string up = "unix:" + agent_.dir() + "/egress.sock";
  const std::string ca =
      "-----BEGIN CERTIFICATE-----\nMIIBfake0123456789\n-----END CERTIFICATE-----\n";
  AgentClient c = agent_.connect();
  auto url = c.set_egress(up, 0, {}, 53, {{"API_KEY", "carapace-cred-x"}}, ca);
  ASSERT_TRUE(url.ok()) << url.error().describe();
  auto got = run_exec(c, {"sh", "-c",
                          "echo $SSL_CERT_FILE; echo $REQUESTS_CA_BUNDLE $CURL_CA_BUNDLE "
                          "$PIP_CERT $GIT_SSL_CAINFO; echo $NODE_EXTRA_CA_CERTS; "
                          "cat \"$NODE_EXTRA_CA_CERTS\"; tail -n 3 \"$SSL_CERT_FILE\""});
  ASSERT_TRUE(got.ok());
  std::istringstream lines(got->out);
  std::string bundle, others, alone;
  std::getline(lines, bundle);
  std::getline(lines, others);
  std::getline(lines, alone);
  EXPECT_TRUE(bundle.ends_with("/ca-bundle.pem")) << got->out;
  EXPECT_EQ(others, bundle + " " + bundle + " " + bundle + " " + bundle) << got->out;
  EXPECT_TRUE(alone.ends_with("/ca.pem")) << got->out;
  // The CA alone, then the bundle ending with it.
  EXPECT_NE(got->out.find(ca + ca), std::string::npos) << got->out;
  const std::string bundle_path = bundle;
  struct stat st {};
  ASSERT_EQ(::stat(bundle_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);

  // The same upstream without a CA (the credentials removed): no variables, no files.
  ASSERT_TRUE(c.set_egress(up, port_of(*url), {}, 53, {}).ok());
  got = run_exec(c, {"sh", "-c", "echo \"[$SSL_CERT_FILE$NODE_EXTRA_CA_CERTS]\""});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->out, "[]\n");
  EXPECT_NE(::access(bundle_path.c_str(), F_OK), 0);
  EXPECT_NE(::access(alone.c_str(), F_OK), 0);

  // A CA that is not one PEM certificate is refused.
  AgentClient raw = agent_.connect();
  ASSERT_TRUE(
      raw.send_request({{"op", "egress"}, {"upstream", up}, {"ca_pem", "not a cert"}}).ok());
  auto reply = raw.read_frame_text();
  ASSERT_TRUE(reply.ok());
  EXPECT_NE(reply->find("bad_request"), std::string::npos) << *reply;

  ASSERT_TRUE(c.set_egress(up, port_of(*url), {}, 53, {}, ca).ok());
  ASSERT_EQ(::access(bundle_path.c_str(), F_OK), 0);
  ASSERT_TRUE(agent_.connect().set_egress("").ok());
  EXPECT_NE(::access(bundle_path.c_str(), F_OK), 0);
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

// Transparent mode, for programs that ignore the proxy variables: the stub resolver answers a
// name with a stand-in address, a connection to it on a captured port becomes CONNECT name:port
// at the real proxy, whose policy decides as for any other request (docs/security.md #44-45).
// A plain TCP client stands for such a program: it resolves through the stub itself.
class TransparentEgressTest : public AgentEgressTest {
 protected:
  void SetUp() override {
    AgentEgressTest::SetUp();
    resolver_.add("allowed.test", {{egress::IpAddress::v4(127, 0, 0, 1)}});
    resolver_.add("other.test", {{egress::IpAddress::v4(127, 0, 0, 1)}});
    egress::EgressProxyOptions o;
    o.listen_path = agent_.dir() + "/egress.sock";
    o.policy = *egress::EgressPolicy::parse({"allowed.test"}, {});
    o.resolve = resolver_.resolver();
    o.check = egress::testing::loopback_admitting_check();
    o.log = [](const std::string&) {};
    auto proxy = egress::EgressProxy::start(std::move(o));
    ASSERT_TRUE(proxy.ok()) << proxy.error().describe();
    proxy_ = std::move(*proxy);
    AgentClient c = agent_.connect();
    auto reply = c.send_request({{"op", "egress"},
                                 {"upstream", "unix:" + agent_.dir() + "/egress.sock"},
                                 {"listen_port", 0},
                                 {"transparent_ports", {web_.port()}},
                                 {"dns_port", 0}});
    ASSERT_TRUE(reply.ok());
    auto text = c.read_frame_text();
    ASSERT_TRUE(text.ok());
    auto j = nlohmann::json::parse(*text);
    ASSERT_TRUE(j.value("ok", false)) << *text;
    dns_port_ = j.at("dns_port").get<uint16_t>();
    EXPECT_EQ(j.at("transparent_ports"), nlohmann::json::array({web_.port()}));
  }

  // The stub's reply to a query for `name` of `qtype`.
  std::vector<uint8_t> ask(const std::string& name, uint16_t qtype = 1) {
    std::vector<uint8_t> q{0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
    size_t start = 0;
    while (start < name.size()) {
      size_t dot = std::min(name.find('.', start), name.size());
      q.push_back(static_cast<uint8_t>(dot - start));
      q.insert(q.end(), name.begin() + static_cast<ptrdiff_t>(start),
               name.begin() + static_cast<ptrdiff_t>(dot));
      start = dot + 1;
    }
    q.insert(q.end(), {0, static_cast<uint8_t>(qtype >> 8), static_cast<uint8_t>(qtype), 0, 1});
    UniqueFd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    timeval tv{5, 0};
    ::setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(dns_port_);
    ::sendto(s.get(), q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof a);
    std::vector<uint8_t> reply(600);
    const ssize_t n = ::recv(s.get(), reply.data(), reply.size(), 0);
    reply.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return reply;
  }

  // The A record's address in a reply with one answer, 0 if none.
  static uint32_t answer(const std::vector<uint8_t>& r) {
    if (r.size() < 16 || r[7] != 1) return 0;
    const auto* p = r.data() + r.size() - 4;
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
  }

  // A GET to address:web port, and whatever comes back before EOF or a reset.
  std::string get(uint32_t address, const std::string& host) {
    UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(address);
    a.sin_port = htons(web_.port());
    if (::connect(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      return "connect: " + std::string(strerror(errno));
    const std::string req = "GET /t HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n";
    ::send(s.get(), req.data(), req.size(), MSG_NOSIGNAL);
    return egress::testing::read_until_eof(s.get(), 10s);
  }

  egress::testing::LoopbackUpstream web_{egress::testing::LoopbackUpstream::Mode::kHttp};
  egress::testing::TableResolver resolver_;
  std::unique_ptr<egress::EgressProxy> proxy_;
  uint16_t dns_port_ = 0;
};

TEST_F(TransparentEgressTest, AnAllowedNameResolvesToAStandInThatReachesItThroughTheProxy) {
  const uint32_t a = answer(ask("Allowed.Test"));
  ASSERT_EQ(a >> 23, 0x7f800001u >> 23) << std::hex << a;  // in 127.128.0.0/9
  EXPECT_EQ(answer(ask("allowed.test")), a);               // stable
  const std::string got = get(a, "allowed.test");
  EXPECT_NE(got.find("hello"), std::string::npos) << got;
  auto reqs = web_.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].rfind("GET /t HTTP/1.1\r\n", 0), 0u) << reqs[0];
}

TEST_F(TransparentEgressTest, ADeniedNameResolvesButItsConnectionIsCutWithNothingSent) {
  const uint32_t a = answer(ask("other.test"));
  ASSERT_NE(a, 0u);
  const std::string got = get(a, "other.test");
  EXPECT_EQ(got.find("hello"), std::string::npos) << got;
  EXPECT_TRUE(web_.requests().empty());
  // The allowed one still works afterwards.
  EXPECT_NE(get(answer(ask("allowed.test")), "allowed.test").find("hello"), std::string::npos);
}

TEST_F(TransparentEgressTest, TheStubAnswersAAAAWithNoDataAndNonHostNamesWithNxDomain) {
  auto six = ask("allowed.test", 28);
  ASSERT_GE(six.size(), 12u);
  EXPECT_EQ(six[3] & 0x0f, 0);  // NOERROR
  EXPECT_EQ(six[7], 0);         // no answer
  auto literal = ask("127.0.0.1");
  ASSERT_GE(literal.size(), 12u);
  EXPECT_EQ(literal[3] & 0x0f, 3);  // NXDOMAIN
  auto local = ask("localhost");
  ASSERT_GE(local.size(), 12u);
  EXPECT_EQ(local[3] & 0x0f, 3);
}

TEST_F(TransparentEgressTest, BadPortsChangeNothingAndNewPortsKeepTheStandIns) {
  const uint32_t a = answer(ask("allowed.test"));
  const std::string up = "unix:" + agent_.dir() + "/egress.sock";
  for (std::vector<uint16_t> bad :
       {std::vector<uint16_t>{0}, {web_.port(), web_.port()}, std::vector<uint16_t>(17, 1)}) {
    EXPECT_FALSE(agent_.connect().set_egress(up, 0, bad, 0).ok());
    EXPECT_NE(get(a, "allowed.test").find("hello"), std::string::npos) << "after a bad request";
  }
  // A new forwarder on other ports: the stand-in keeps its name and is captured again.
  const auto other = static_cast<uint16_t>(web_.port() == 65535 ? 1024 : web_.port() + 1);
  auto moved = agent_.connect().set_egress(up, 0, {other, web_.port()}, 0);
  ASSERT_TRUE(moved.ok()) << moved.error().describe();
  EXPECT_NE(get(a, "allowed.test").find("hello"), std::string::npos) << "after new ports";
}

}  // namespace
}  // namespace carapace::testing
