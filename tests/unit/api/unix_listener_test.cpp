// listen_unix (common/http/listener.h): the socket gets the mode asked for whatever the umask, and
// a link is never what the mode is set on.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "common/http/listener.h"

namespace carapace::http {
namespace {

class UnixListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/carapace-listener-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    ::unlink((dir_ + "/s").c_str());
    ::unlink((dir_ + "/target").c_str());
    ::rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(UnixListenerTest, ModeIsSetWhateverTheUmask) {
  const mode_t old = ::umask(077);
  auto l = listen_unix(dir_ + "/s", 4, 0666);
  ::umask(old);
  ASSERT_TRUE(l.ok()) << l.error().describe();
  struct stat st {};
  ASSERT_EQ(::lstat((dir_ + "/s").c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0666u);
  unlink_unix_listener(*l);
  auto d = listen_unix(dir_ + "/s", 4);
  ASSERT_TRUE(d.ok()) << d.error().describe();
  ASSERT_EQ(::lstat((dir_ + "/s").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);  // the default: its owner only
  unlink_unix_listener(*d);
}

// A link where the socket should go is not a stale socket: refused, and what it points at keeps
// its mode.
TEST_F(UnixListenerTest, ALinkInThePlaceIsRefusedAndItsTargetUntouched) {
  const std::string target = dir_ + "/target";
  FILE* f = std::fopen(target.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  ASSERT_EQ(::chmod(target.c_str(), 0600), 0);
  ASSERT_EQ(::symlink(target.c_str(), (dir_ + "/s").c_str()), 0);
  auto l = listen_unix(dir_ + "/s", 4, 0666);
  EXPECT_FALSE(l.ok());
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

}  // namespace
}  // namespace carapace::http
