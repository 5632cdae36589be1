// The byte relay (common/base/byte_relay.h) between two socket pairs: both directions, half-close
// passed on, only_down, the stop fd, the idle deadline and a peer that stops reading.
#include "common/base/byte_relay.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "common/base/unique_fd.h"

namespace carapace {
namespace {

using namespace std::chrono_literals;

// Two connected pairs: the test holds client/upstream's far ends, the relay the near ones.
struct Pairs {
  UniqueFd client_far, client_near, up_near, up_far;
  Pairs() {
    int a[2], b[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b), 0);
    client_far = UniqueFd(a[0]);
    client_near = UniqueFd(a[1]);
    up_near = UniqueFd(b[0]);
    up_far = UniqueFd(b[1]);
    for (int fd : {client_near.get(), up_near.get()})
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
};

std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0)
    out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(ByteRelay, CopiesBothWaysAndPassesEachHalfCloseOn) {
  Pairs p;
  RelayBytes bytes;
  RelayEnd end = RelayEnd::kReset;
  std::thread relay(
      [&] { end = run_relay(p.client_near.get(), p.up_near.get(), -1, 5s, false, bytes); });
  const std::string big(3 << 20, 'u');
  std::thread writer([&] {
    ::send(p.client_far.get(), big.data(), big.size(), MSG_NOSIGNAL);
    ::shutdown(p.client_far.get(), SHUT_WR);
  });
  EXPECT_EQ(read_all(p.up_far.get()), big);  // ends at the client's EOF, passed on
  writer.join();
  ::send(p.up_far.get(), "answer", 6, MSG_NOSIGNAL);
  ::shutdown(p.up_far.get(), SHUT_WR);
  EXPECT_EQ(read_all(p.client_far.get()), "answer");
  relay.join();
  EXPECT_EQ(end, RelayEnd::kClosed);
  EXPECT_EQ(bytes.up, big.size());
  EXPECT_EQ(bytes.down, 6u);
}

TEST(ByteRelay, OnlyDownNeverReadsTheClient) {
  Pairs p;
  ::send(p.client_far.get(), "second request", 14, MSG_NOSIGNAL);
  ::send(p.up_far.get(), "response", 8, MSG_NOSIGNAL);
  ::shutdown(p.up_far.get(), SHUT_WR);
  RelayBytes bytes;
  EXPECT_EQ(run_relay(p.client_near.get(), p.up_near.get(), -1, 5s, true, bytes),
            RelayEnd::kClosed);
  EXPECT_EQ(bytes.up, 0u);
  EXPECT_EQ(read_all(p.client_far.get()), "response");
  char buf[32];
  EXPECT_EQ(::recv(p.client_near.get(), buf, sizeof buf, 0), 14);  // still there, never relayed
}

TEST(ByteRelay, TheStopFdAndTheIdleDeadlineEndIt) {
  Pairs p;
  UniqueFd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  RelayBytes bytes;
  std::thread later([&] {
    std::this_thread::sleep_for(50ms);
    uint64_t one = 1;
    EXPECT_EQ(::write(stop.get(), &one, sizeof one), 8);
  });
  EXPECT_EQ(run_relay(p.client_near.get(), p.up_near.get(), stop.get(), 5s, false, bytes),
            RelayEnd::kStopped);
  later.join();
  Pairs q;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(run_relay(q.client_near.get(), q.up_near.get(), -1, 100ms, false, bytes),
            RelayEnd::kIdle);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

// The upstream answered and closed; a client that neither sends nor closes loses the relay after
// the shorter deadline, not the idle one. While it still sends, it keeps it.
TEST(ByteRelay, ASilentClientAfterTheUpstreamClosedGetsTheShortDeadline) {
  Pairs p;
  ::send(p.up_far.get(), "403 and bye", 11, MSG_NOSIGNAL);
  ::shutdown(p.up_far.get(), SHUT_WR);
  RelayBytes bytes;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(run_relay(p.client_near.get(), p.up_near.get(), -1, 60s, false, bytes, 200ms),
            RelayEnd::kIdle);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_EQ(read_all(p.client_far.get()), "403 and bye");

  Pairs q;
  ::shutdown(q.up_far.get(), SHUT_WR);
  std::thread talker([&] {
    for (int i = 0; i < 6; i++) {
      std::this_thread::sleep_for(100ms);
      ::send(q.client_far.get(), "x", 1, MSG_NOSIGNAL);
    }
    ::shutdown(q.client_far.get(), SHUT_WR);
  });
  EXPECT_EQ(run_relay(q.client_near.get(), q.up_near.get(), -1, 60s, false, bytes, 250ms),
            RelayEnd::kClosed);
  talker.join();
  EXPECT_EQ(read_all(q.up_far.get()), "xxxxxx");
}

TEST(ByteRelay, APeerThatStopsReadingStallsOnlyUntilTheIdleDeadline) {
  Pairs p;
  // The upstream never reads: the client's bytes fill the socket buffers and the relay's one
  // bounded buffer, then nothing moves and the idle deadline ends it.
  std::thread writer([&] {
    const std::string chunk(1 << 16, 'x');
    for (int i = 0; i < 200; i++) {
      if (::send(p.client_far.get(), chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        break;
    }
  });
  RelayBytes bytes;
  EXPECT_EQ(run_relay(p.client_near.get(), p.up_near.get(), -1, 200ms, false, bytes),
            RelayEnd::kIdle);
  writer.join();
  EXPECT_LT(bytes.up, 200u << 16);
}

TEST(ByteRelay, AGoneClientIsAReset) {
  Pairs p;
  ::send(p.up_far.get(), "to nobody", 9, MSG_NOSIGNAL);
  p.client_far.reset();
  RelayBytes bytes;
  EXPECT_EQ(run_relay(p.client_near.get(), p.up_near.get(), -1, 2s, false, bytes),
            RelayEnd::kReset);
}

}  // namespace
}  // namespace carapace
