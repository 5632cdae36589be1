// A stand-in for a VMM's hybrid vsock socket (Firecracker style): a Unix socket that answers
// "CONNECT <port>\n" with "OK <n>\n" when <port> is the agent's, then relays bytes both ways to
// the agent's own Unix socket. Any other port gets the connection closed, as Firecracker does.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "common/base/unique_fd.h"

namespace carapace::testing {

class FakeVsockMux {
 public:
  FakeVsockMux(std::string path, std::string agent_socket, uint32_t port);
  ~FakeVsockMux();
  bool listening() const { return listen_.valid(); }

 private:
  void run();
  void relay(int a, int b);

  std::string path_, agent_socket_;
  uint32_t port_;
  UniqueFd listen_;
  UniqueFd stop_r_, stop_w_;
  std::thread thread_;
};

}  // namespace carapace::testing
