// remove_stale_socket: what a server binding a socket path may remove (docs/security.md #28: a path
// that is a live server's socket or not a socket at all is left alone).
#include "common/base/stale_socket.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace carapace {
namespace {

int bound_socket(const std::string& path, bool listening) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << strerror(errno);
  if (listening) {
    EXPECT_EQ(listen(fd, 4), 0);
  }
  return fd;
}

std::string temp_path(const char* name) {
  std::string p = ::testing::TempDir() + "stale-socket-" + name;
  unlink(p.c_str());
  return p;
}

bool exists(const std::string& p) {
  struct stat st {};
  return lstat(p.c_str(), &st) == 0;
}

TEST(StaleSocket, NothingThereIsFine) {
  EXPECT_TRUE(remove_stale_socket(temp_path("none")).ok());
}

TEST(StaleSocket, ASocketNobodyServesIsRemoved) {
  const std::string p = temp_path("stale");
  close(bound_socket(p, true));  // the server died; its file stays
  ASSERT_TRUE(exists(p));
  EXPECT_TRUE(remove_stale_socket(p).ok());
  EXPECT_FALSE(exists(p));
}

TEST(StaleSocket, ALiveServersSocketIsRefused) {
  const std::string p = temp_path("live");
  int fd = bound_socket(p, true);
  auto s = remove_stale_socket(p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(s.error().message.find("in use"), std::string::npos);
  EXPECT_TRUE(exists(p));
  close(fd);
}

TEST(StaleSocket, AFileThatIsNotASocketIsRefused) {
  const std::string p = temp_path("file");
  close(open(p.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
  auto s = remove_stale_socket(p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("not a socket"), std::string::npos);
  EXPECT_TRUE(exists(p));
  unlink(p.c_str());
}

TEST(StaleSocket, APathTooLongIsRefused) {
  EXPECT_FALSE(remove_stale_socket("/tmp/" + std::string(200, 'x')).ok());
}

}  // namespace
}  // namespace carapace
