#include "vmm/pool/restore_notice.h"

#include <sys/random.h>

#include <thread>

#include "common/agent/agent_client.h"

namespace carapace {

namespace {

Result<std::string> random_bytes(size_t n) {
  std::string out(n, '\0');
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(out.data() + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return sys_error("getrandom");
    }
    got += static_cast<size_t>(r);
  }
  return out;
}

}  // namespace

Result<std::string> generate_sandbox_token() {
  std::string raw = TRY(random_bytes(32));
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : raw) {
    hex += kHex[c >> 4];
    hex += kHex[c & 15];
  }
  return hex;
}

Result<std::vector<std::string>> send_restore_notice(const std::string& vsock_uds,
                                                     const RestoreNotice& notice,
                                                     std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  AgentPostRestore req;
  req.entropy = TRY(random_bytes(64));
  req.new_token = notice.new_token;
  req.hostname = notice.hostname;
  for (;;) {
    auto client = AgentClient::connect_vsock_uds(vsock_uds);
    if (client.ok()) {
      client->set_token(notice.token);
      client->set_io_timeout_ms(static_cast<int>(
          std::max<int64_t>(100, std::chrono::duration_cast<std::chrono::milliseconds>(
                                     deadline - std::chrono::steady_clock::now())
                                     .count())));
      timespec now{};
      clock_gettime(CLOCK_REALTIME, &now);
      req.clock = now;  // taken as late as possible
      return client->post_restore(req);
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return make_error("restore notice to " + vsock_uds +
                        " not delivered: " + client.error().describe());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace carapace
