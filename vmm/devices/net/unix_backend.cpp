#include "vmm/devices/net/unix_backend.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace carapace::net {

namespace {

Error bad(const std::string& msg) {
  return as_invalid_input(make_error("virtio-net: " + msg));
}

Result<sockaddr_un> make_address(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path || path.find('\0') != std::string::npos)
    return bad("unix socket path '" + path + "' is empty or too long");
  std::memcpy(a.sun_path, path.data(), path.size());
  return a;
}

// A socket file nobody is bound to any more (a VMM that died) is removed; a live one (another VM
// using the same path) or anything that is not a socket is left alone and refused.
Status clear_stale_socket(const sockaddr_un& addr) {
  struct stat st;
  if (::lstat(addr.sun_path, &st) < 0) {
    if (errno == ENOENT) return {};
    return sys_error(std::string("virtio-net: lstat ") + addr.sun_path);
  }
  if (!S_ISSOCK(st.st_mode)) return bad(std::string(addr.sun_path) + " exists and is not a socket");
  UniqueFd probe(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!probe.valid()) return sys_error("virtio-net: socket");
  // Connecting succeeds for a bound, unconnected socket and fails with EPERM for one connected
  // to someone else (a running device): both are live.
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 ||
      errno == EPERM)
    return bad(std::string(addr.sun_path) + " is in use by another process");
  if (errno != ECONNREFUSED) return sys_error(std::string("virtio-net: probe ") + addr.sun_path);
  if (::unlink(addr.sun_path) < 0 && errno != ENOENT)
    return sys_error(std::string("virtio-net: unlink stale ") + addr.sun_path);
  return {};
}

Status connect_to(int fd, const sockaddr_un& peer) {
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&peer), sizeof peer) == 0) return {};
  if (errno == ENOENT || errno == ECONNREFUSED)
    return bad(std::string("no datagram socket is bound at ") + peer.sun_path +
               " (the peer must exist before the VM starts)");
  if (errno == EPROTOTYPE) return bad(std::string(peer.sun_path) + " is not a datagram socket");
  return sys_error(std::string("virtio-net: connect ") + peer.sun_path);
}

}  // namespace

Result<std::unique_ptr<UnixDatagramBackend>> UnixDatagramBackend::open(
    const std::string& peer_path) {
  const sockaddr_un peer = TRY(make_address(peer_path));
  const sockaddr_un local = TRY(make_address(local_path(peer_path)));
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error("virtio-net: socket");
  TRY_STATUS(clear_stale_socket(local));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&local), sizeof local) < 0)
    return sys_error(std::string("virtio-net: bind ") + local.sun_path);
  // From here the destructor unlinks the bound path, also when connecting fails.
  std::unique_ptr<UnixDatagramBackend> b(
      new UnixDatagramBackend(std::move(fd), peer, local.sun_path));
  TRY_STATUS(connect_to(b->fd_.get(), peer));
  return b;
}

UnixDatagramBackend::~UnixDatagramBackend() {
  if (!local_.empty()) (void)::unlink(local_.c_str());
}

Status UnixDatagramBackend::send(std::span<const uint8_t> frame) {
  for (int attempt = 0;; ++attempt) {
    if (::send(fd_.get(), frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) return {};
    if (errno == EINTR) continue;
    // The peer closed (ECONNREFUSED once, then ENOTCONN): connect again in case it is back.
    if ((errno == ECONNREFUSED || errno == ENOTCONN) && attempt == 0 &&
        connect_to(fd_.get(), peer_).ok())
      continue;
    return sys_error("virtio-net: send to " + description_);
  }
}

Result<RecvResult> UnixDatagramBackend::receive(std::span<uint8_t> buf) {
  for (;;) {
    // MSG_TRUNC: the datagram's real length, so an oversized one is noticed, not cut silently.
    ssize_t n = ::recv(fd_.get(), buf.data(), buf.size(), MSG_DONTWAIT | MSG_TRUNC);
    if (n >= 0) return RecvResult{RecvResult::Kind::kFrame, static_cast<size_t>(n)};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return RecvResult{};
    return sys_error("virtio-net: receive from " + description_);
  }
}

}  // namespace carapace::net
