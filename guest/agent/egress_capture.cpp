// The forwarder's transparent mode (egress_forwarder.h): the stub resolver, the capture
// listeners it opens for each stand-in address, and the CONNECT that starts a captured tunnel.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "guest/agent/dns_message.h"
#include "guest/agent/egress_forwarder.h"

namespace carapace::agent {
namespace {

// Stand-ins never change meaning, so programs may keep them; a short TTL would only cost queries.
constexpr uint32_t kStandInTtl = 300;
constexpr size_t kMaxProxyReply = 8192;
constexpr auto kTunnelSetup = std::chrono::seconds(30);

int remaining_ms(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Waits for `events` on `fd` until `deadline`; false on timeout or error.
bool wait_for(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, remaining_ms(deadline));
    if (r > 0) return true;
    if (r == 0 || errno != EINTR) return false;
  }
}

bool write_all(int fd, const char* data, size_t len,
               std::chrono::steady_clock::time_point deadline) {
  while (len > 0) {
    const ssize_t n = ::send(fd, data, len, MSG_NOSIGNAL);
    if (n > 0) {
      data += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_for(fd, POLLOUT, deadline))
      continue;
    return false;
  }
  return true;
}

}  // namespace

Status EgressForwarder::open_stub_resolver() {
  dns_ = UniqueFd(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!dns_.valid()) return sys_error("egress stub resolver: socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(transparent_.dns_port);
  if (::bind(dns_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return sys_error("egress stub resolver: bind 127.0.0.1:" +
                     std::to_string(transparent_.dns_port));
  socklen_t len = sizeof a;
  if (::getsockname(dns_.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return sys_error("egress stub resolver: getsockname");
  dns_port_ = ntohs(a.sin_port);
  return watch(dns_.get(), kDnsTag);
}

// One datagram per call: the socket is watched level-triggered, so the next one comes round
// again after the listeners' turn rather than starving them.
void EgressForwarder::answer_dns() {
  uint8_t buf[kDnsMaxReplyBytes + 1];
  sockaddr_in from{};
  socklen_t from_len = sizeof from;
  const ssize_t n =
      ::recvfrom(dns_.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
  if (n < 0) return;
  const std::span<const uint8_t> query(buf, static_cast<size_t>(n));
  std::vector<uint8_t> reply;
  auto parsed = parse_dns_query(query);
  if (auto* err = std::get_if<DnsQueryError>(&parsed)) {
    // A datagram without even a header has no id to answer: dropped, as resolvers do.
    if (auto id = dns_query_id(query)) reply = dns_error_reply(*id, err->rcode);
  } else {
    const DnsQuestion& q = std::get<DnsQuestion>(parsed);
    constexpr uint16_t kClassIn = 1;
    if (q.qclass != kClassIn) {
      reply = dns_reply(q, DnsRcode::kRefused);
    } else if (!stub_answers_name(q.name)) {
      reply = dns_reply(q, DnsRcode::kNxDomain);
    } else if (q.qtype != static_cast<uint16_t>(DnsType::kA)) {
      // The name exists, with IPv4 stand-ins only: AAAA and the rest are NODATA, so a
      // resolver asking for both settles on the A record.
      reply = dns_reply(q, DnsRcode::kNoError);
    } else if (auto address = transparent_.names->address_for(q.name)) {
      capture(q.name, *address);
      reply = dns_reply(q, DnsRcode::kNoError, *address, kStandInTtl);
    } else {
      reply = dns_reply(q, DnsRcode::kServFail);  // the table is full
    }
  }
  if (!reply.empty())
    (void)::sendto(dns_.get(), reply.data(), reply.size(), MSG_NOSIGNAL,
                   reinterpret_cast<sockaddr*>(&from), from_len);
}

void EgressForwarder::capture(const std::string& name, uint32_t address) {
  for (uint32_t done : captured_)
    if (done == address) return;
  captured_.push_back(address);
  for (uint16_t port : transparent_.ports) {
    if (listeners_.size() > kMaxCaptureListeners) {
      std::fprintf(stderr, "carapace-agent: egress: capture listeners at their cap (%zu)\n",
                   kMaxCaptureListeners);
      return;
    }
    auto fd = bind_tcp_listener(address, port, nullptr);
    // A port some program already holds on every address (0.0.0.0) stays that program's.
    if (!fd.ok()) {
      std::fprintf(stderr, "carapace-agent: %s\n", fd.error().describe().c_str());
      continue;
    }
    if (!watch(fd->get(), listeners_.size()).ok()) continue;
    listeners_.push_back(Listener{std::move(*fd), name + ":" + std::to_string(port)});
  }
}

bool EgressForwarder::open_tunnel(int client, int upstream, const std::string& target) {
  const auto deadline = std::chrono::steady_clock::now() + kTunnelSetup;
  const std::string request = "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n";
  if (!write_all(upstream, request.data(), request.size(), deadline)) return false;
  // The proxy's answer, up to its blank line; bytes after it are the far end's already.
  std::string got;
  size_t head_end = std::string::npos;
  while (head_end == std::string::npos) {
    if (got.size() >= kMaxProxyReply || !wait_for(upstream, POLLIN, deadline)) return false;
    char buf[1024];
    const ssize_t n = ::recv(upstream, buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    got.append(buf, static_cast<size_t>(n));
    head_end = got.find("\r\n\r\n");
  }
  // "HTTP/1.1 200 ..." (RFC 9110 9.3.6: any 2xx opens the tunnel; the proxy sends 200).
  if (got.size() < 12 || !got.starts_with("HTTP/1.") || got[9] != '2') return false;
  const size_t rest = head_end + 4;
  return write_all(client, got.data() + rest, got.size() - rest, deadline);
}

}  // namespace carapace::agent
