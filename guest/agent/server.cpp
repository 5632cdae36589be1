#include "guest/agent/server.h"

#include <linux/vm_sockets.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <system_error>
#include <thread>

#include "common/agent/wire.h"
#include "guest/agent/connection.h"
#include "guest/agent/request.h"

namespace carapace::agent {
namespace {

constexpr int kBacklog = 128;

void refuse_busy(UniqueFd fd) {
  Replier out(fd.get(), nullptr);
  (void)out.error(code::kBusy, "too many connections");
}

}  // namespace

Result<UniqueFd> listen_vsock(uint32_t port) {
  UniqueFd fd(::socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error("vsock socket");
  sockaddr_vm addr{};
  addr.svm_family = AF_VSOCK;
  addr.svm_cid = VMADDR_CID_ANY;
  addr.svm_port = port;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0)
    return sys_error("bind vsock port " + std::to_string(port));
  if (::listen(fd.get(), kBacklog) < 0) return sys_error("listen on vsock");
  return fd;
}

Result<UniqueFd> listen_unix(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return make_error("socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(path.c_str());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error("unix socket");
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0)
    return sys_error("bind " + path);
  if (::chmod(path.c_str(), 0600) < 0) return sys_error("chmod " + path);
  if (::listen(fd.get(), kBacklog) < 0) return sys_error("listen on " + path);
  return fd;
}

Status serve_forever(AgentContext& ctx, int listen_fd) {
  std::atomic<int>& active = ctx.connections;
  for (;;) {
    int c = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS) {
        ::usleep(10'000);  // out of resources for now; connections will end and free some
        continue;
      }
      return sys_error("accept");
    }
    UniqueFd fd(c);
    if (active.fetch_add(1) >= ctx.options.max_connections) {
      active.fetch_sub(1);
      refuse_busy(std::move(fd));
      continue;
    }
    try {
      std::thread([&ctx, fd = std::move(fd)]() mutable {
        serve_connection(ctx, std::move(fd));
        ctx.connections.fetch_sub(1);
      }).detach();
    } catch (const std::system_error&) {
      active.fetch_sub(1);  // no thread for it: the fd was closed with the lambda
    }
  }
}

}  // namespace carapace::agent
