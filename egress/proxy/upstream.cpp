#include "egress/proxy/upstream.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/http/socket_io.h"

namespace carapace::egress {
namespace {

DialRefusal refusal(DialRefusal::Kind kind, std::string reason, std::string address = "") {
  return DialRefusal{kind, std::move(reason), "", std::move(address)};
}

// One non-blocking connect with a deadline. The error (if any) is errno-like.
Result<UniqueFd> connect_one(const IpAddress& a, uint16_t port, std::chrono::milliseconds timeout) {
  sockaddr_storage ss{};
  socklen_t len = a.to_sockaddr(port, &ss);
  int family = a.family == IpAddress::Family::kV4 ? AF_INET : AF_INET6;
  UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error("socket");
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) == 0) return fd;
  if (errno != EINPROGRESS) return sys_error("connect " + a.to_string());
  auto writable = TRY(http::wait_writable(fd.get(), timeout));
  if (!writable) return sys_error("connect " + a.to_string(), ETIMEDOUT);
  int err = 0;
  socklen_t elen = sizeof err;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &elen) != 0) return sys_error("SO_ERROR");
  if (err != 0) return sys_error("connect " + a.to_string(), err);
  return fd;
}

}  // namespace

Result<std::vector<IpAddress>> resolve_with_system(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &res);
  if (rc != 0) return make_error("cannot resolve " + name + ": " + ::gai_strerror(rc));
  std::vector<IpAddress> out;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    auto a = IpAddress::from_sockaddr(ai->ai_addr, ai->ai_addrlen);
    if (a && std::find(out.begin(), out.end(), *a) == out.end()) out.push_back(*a);
  }
  ::freeaddrinfo(res);
  if (out.empty()) return make_error("cannot resolve " + name + ": no addresses");
  return out;
}

Result<Upstream, DialRefusal> dial_upstream(const EgressPolicy& policy, const Destination& dest,
                                            const DialOptions& options) {
  std::vector<IpAddress> addresses;
  if (dest.literal) {
    addresses.push_back(*dest.literal);
  } else {
    auto resolved = options.resolve(dest.host);
    if (!resolved.ok()) return refusal(DialRefusal::Kind::kUnresolved, resolved.error().message);
    addresses = std::move(*resolved);
    if (addresses.empty())
      return refusal(DialRefusal::Kind::kUnresolved, "cannot resolve " + dest.host);
  }
  for (const IpAddress& a : addresses) {
    Decision d = options.check(policy, dest, a);
    if (!d.allowed) {
      DialRefusal r = refusal(DialRefusal::Kind::kDenied, d.reason, a.to_string());
      r.rule = d.rule;
      return r;
    }
  }
  std::string last;
  int last_errno = 0;
  for (const IpAddress& a : addresses) {
    auto fd = connect_one(a, dest.port, options.connect_timeout);
    if (fd.ok()) return Upstream{std::move(*fd), a};
    last_errno = fd.error().sys_errno;
    last = fd.error().describe();
  }
  DialRefusal r = refusal(
      last_errno == ETIMEDOUT ? DialRefusal::Kind::kTimeout : DialRefusal::Kind::kUnreachable, last,
      addresses.back().to_string());
  r.sys_errno = last_errno;
  return r;
}

}  // namespace carapace::egress
