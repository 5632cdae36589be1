// The egress proxy's cost: one 256 MiB download through a CONNECT tunnel (MB/s) and the latency
// of small plain-HTTP GETs (p50/p99 of --requests), each direct, through carapace's proxy and
// through Debian's tinyproxy with an equivalent allowlist, in the same run, ratios printed.
//
//   build/bench/egress_proxy [--requests N] [--mib M]
//
// The upstream is an HTTP server in this process on 127.0.0.1. carapace's proxy runs in-process
// too (the library, with the production address check plus loopback admitted -- the production
// check alone never admits it) on its Unix socket, as a sandbox reaches it; tinyproxy listens on
// 127.0.0.1 TCP. Targets (README.md, Benchmarks): >= 1 GB/s per tunnel, <= 100 us added p50.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "common/base/unique_fd.h"
#include "egress/policy/address_class.h"
#include "egress/proxy/egress_proxy.h"
#include "egress/proxy/host_addresses.h"
#include "tests/unit/egress/proxy_test_servers.h"

using namespace carapace;
using namespace carapace::egress;
using bench::Clock;

namespace {

// GET /small -> 64 bytes; GET /big/<bytes> -> that many bytes. One request per connection.
class UpstreamServer {
 public:
  UpstreamServer() {
    fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    int one = 1;
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(fd_.get(), 512) != 0) {
      perror("egress_proxy: upstream");
      exit(1);
    }
    socklen_t len = sizeof a;
    ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~UpstreamServer() {
    ::shutdown(fd_.get(), SHUT_RDWR);
    thread_.join();
  }
  uint16_t port() const { return port_; }

 private:
  void run() {
    for (;;) {
      int c = ::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      std::thread([c] { serve(c); }).detach();
    }
  }
  static void serve(int c) {
    std::string req;
    char buf[4096];
    while (req.find("\r\n\r\n") == std::string::npos) {
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      req.append(buf, static_cast<size_t>(n));
    }
    uint64_t size = 64;
    size_t big = req.find("/big/");
    if (big != std::string::npos) size = std::stoull(req.substr(big + 5));
    std::string head = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(size) +
                       "\r\nConnection: close\r\n\r\n";
    ::send(c, head.data(), head.size(), MSG_NOSIGNAL);
    static const std::string chunk(1 << 20, 'x');
    while (size > 0) {
      size_t n = std::min<uint64_t>(size, chunk.size());
      ssize_t w = ::send(c, chunk.data(), n, MSG_NOSIGNAL);
      if (w <= 0) break;
      size -= static_cast<uint64_t>(w);
    }
    ::close(c);
  }
  UniqueFd fd_;
  uint16_t port_ = 0;
  std::thread thread_;
};

// Reads until EOF; the byte count, or until the end of a head when `head_only` (a CONNECT reply).
uint64_t drain(int fd, bool head_only = false) {
  static thread_local std::vector<char> buf(1 << 20);
  uint64_t total = 0;
  std::string head;
  for (;;) {
    ssize_t n = ::recv(fd, buf.data(), head_only ? 1 : buf.size(), 0);
    if (n <= 0) return total;
    total += static_cast<uint64_t>(n);
    if (head_only) {
      head.push_back(buf[0]);
      if (head.size() >= 4 && head.compare(head.size() - 4, 4, "\r\n\r\n") == 0) return total;
    }
  }
}

void send_str(int fd, const std::string& s) {
  ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
}

struct Path {
  const char* name;
  std::function<UniqueFd()> open;  // a connection whose next bytes go to the upstream
  std::function<std::string(const std::string& path)> request;  // a GET of `path` on it
};

double throughput_mbs(const Path& p, uint16_t upstream, uint64_t bytes, bool tunnel) {
  UniqueFd fd = p.open();
  if (!fd.valid()) return 0;
  auto t0 = Clock::now();
  if (tunnel) {
    send_str(fd.get(), "CONNECT 127.0.0.1:" + std::to_string(upstream) + " HTTP/1.1\r\n\r\n");
    drain(fd.get(), true);
    send_str(fd.get(), "GET /big/" + std::to_string(bytes) + " HTTP/1.1\r\nHost: x\r\n\r\n");
  } else {
    send_str(fd.get(), p.request("/big/" + std::to_string(bytes)));
  }
  uint64_t got = drain(fd.get());
  double s = bench::ms_since(t0) / 1000;
  return got < bytes ? 0 : static_cast<double>(bytes) / s / 1e6;
}

std::vector<double> latencies_us(const Path& p, int n) {
  std::vector<double> out;
  for (int i = 0; i < n; i++) {
    auto t0 = Clock::now();
    UniqueFd fd = p.open();
    if (!fd.valid()) return {};
    send_str(fd.get(), p.request("/small"));
    if (drain(fd.get()) == 0) return {};
    out.push_back(bench::ms_since(t0) * 1000);
  }
  std::sort(out.begin(), out.end());
  return out;
}

double pct(const std::vector<double>& v, double q) {
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

// tinyproxy on a free port with an allowlist of 127.0.0.1 (its Filter, default deny) and CONNECT
// to the upstream's port only; 0 when it is not installed or did not start.
pid_t start_tinyproxy(const std::string& dir, uint16_t upstream, uint16_t* port) {
  if (::access("/usr/bin/tinyproxy", X_OK) != 0) return 0;
  UniqueFd probe(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(probe.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return 0;
  socklen_t len = sizeof a;
  ::getsockname(probe.get(), reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  probe.reset();
  std::string conf = dir + "/tinyproxy.conf", filter = dir + "/filter";
  FILE* f = fopen(filter.c_str(), "w");
  fprintf(f, "^127\\.0\\.0\\.1$\n");
  fclose(f);
  f = fopen(conf.c_str(), "w");
  fprintf(f,
          "Port %u\nListen 127.0.0.1\nTimeout 60\nMaxClients 200\nAllow 127.0.0.1\n"
          "ConnectPort %u\nFilter \"%s\"\nFilterDefaultDeny Yes\nFilterExtended On\n"
          "LogLevel Critical\nDisableViaHeader Yes\n",
          *port, upstream, filter.c_str());
  fclose(f);
  pid_t pid = fork();
  if (pid == 0) {
    execl("/usr/bin/tinyproxy", "tinyproxy", "-d", "-c", conf.c_str(), nullptr);
    _exit(127);
  }
  for (int i = 0; i < 200; i++) {
    if (egress::testing::connect_loopback(*port).valid()) return pid;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int requests = 1000;
  uint64_t mib = 256;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--requests") {
      requests = std::stoi(bench::flag_value("egress_proxy", argc, argv, &i));
    } else if (a == "--mib") {
      mib = std::stoull(bench::flag_value("egress_proxy", argc, argv, &i));
    } else {
      fprintf(stderr, "usage: egress_proxy [--requests N] [--mib M]\n");
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  UpstreamServer up;
  char tmpl[] = "/tmp/carapace-egress-bench-XXXXXX";
  std::string dir = mkdtemp(tmpl);

  EgressProxyOptions o;
  o.listen_path = dir + "/egress.sock";
  o.sandbox = "bench";
  o.policy = *EgressPolicy::parse({"127.0.0.0/8:" + std::to_string(up.port())}, {});
  // The production check (the host's own addresses, kept fresh: host_addresses.h), with loopback
  // admitted on top: the bench's upstream is on loopback.
  auto host = HostAddresses::create(host_interface_addresses, kHostAddressesMaxAge);
  if (!host.ok()) {
    fprintf(stderr, "egress_proxy: %s\n", host.error().describe().c_str());
    return 1;
  }
  o.check = [host = *host](const EgressPolicy& p, const Destination& d, const IpAddress& a) {
    Decision dec = check_address(p, d, a, *host->current());
    if (!dec.allowed && classify_address(a) == AddressClass::kLoopback)
      return Decision{true, "loopback admitted by the bench", ""};
    return dec;
  };
  o.log = [](const std::string&) {};
  auto proxy = EgressProxy::start(std::move(o));
  if (!proxy.ok()) {
    fprintf(stderr, "egress_proxy: %s\n", proxy.error().describe().c_str());
    return 1;
  }
  uint16_t tiny_port = 0;
  pid_t tiny = start_tinyproxy(dir, up.port(), &tiny_port);

  const std::string hostport = "127.0.0.1:" + std::to_string(up.port());
  std::vector<Path> paths = {
      {"direct", [&] { return egress::testing::connect_loopback(up.port()); },
       [](const std::string& p) { return "GET " + p + " HTTP/1.1\r\nHost: x\r\n\r\n"; }},
      {"carapace", [&] { return egress::testing::connect_proxy(dir + "/egress.sock"); },
       [&](const std::string& p) {
         return "GET http://" + hostport + p + " HTTP/1.1\r\nHost: x\r\n\r\n";
       }},
  };
  if (tiny) {
    paths.push_back({"tinyproxy", [&] { return egress::testing::connect_loopback(tiny_port); },
                     [&](const std::string& p) {
                       return "GET http://" + hostport + p + " HTTP/1.1\r\nHost: x\r\n\r\n";
                     }});
  } else {
    printf("tinyproxy: not installed or did not start (tools/setup installs it); no ratio\n");
  }

  const uint64_t bytes = mib << 20;
  printf("%-10s %14s %12s %12s\n", "path", "MB/s (tunnel)", "GET p50 us", "GET p99 us");
  std::vector<double> mbs, p50;
  for (const Path& p : paths) {
    double t = throughput_mbs(p, up.port(), bytes, p.name != std::string("direct"));
    auto lat = latencies_us(p, requests);
    mbs.push_back(t);
    p50.push_back(pct(lat, 0.5));
    printf("%-10s %14.0f %12.1f %12.1f\n", p.name, t, pct(lat, 0.5), pct(lat, 0.99));
  }
  printf("carapace added p50: %.1f us (target <= 100); tunnel %.0f MB/s (target >= 1000)\n",
         p50[1] - p50[0], mbs[1]);
  if (tiny) {
    printf("ratio carapace/tinyproxy: throughput %.2f, added p50 %.2f\n", mbs[1] / mbs[2],
           (p50[1] - p50[0]) / std::max(1e-9, p50[2] - p50[0]));
    kill(tiny, SIGTERM);
    waitpid(tiny, nullptr, 0);
  }
  (*proxy)->stop();
  std::string rm = "rm -rf " + dir;
  return system(rm.c_str()) == 0 ? 0 : 1;
}
