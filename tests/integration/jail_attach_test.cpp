// `carapace jail attach` (jailer/jail_attach.h, docs/security.md #68): a host folder put into a
// running jail's mount namespace, id-mapped, read-only when asked, and nowhere else. The jailed
// program is a static busybox copied into the jail's one writable folder, so the test can look
// from inside. Needs root; as another user it fails, never skips.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "tests/integration/proc_status.h"
#include "tests/integration/process_runner.h"
#include "tests/integration/testguest_harness.h"
#include "tests/integration/text_file.h"

namespace carapace::testing {
namespace {

constexpr uid_t kJailUid = 61240;
constexpr uid_t kOwner = 61241;

class JailAttachTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "jail attach needs root (namespaces, mounts)";
    base_ = "/tmp/carapace-attach-test-" + std::to_string(getpid());
    vm_ = base_ + "/vm";
    share_ = base_ + "/share";
    for (const std::string& d : {base_, base_ + "/jails", vm_, vm_ + "/fs0", vm_ + "/fs1", share_})
      ASSERT_EQ(::mkdir(d.c_str(), 0755), 0) << d;
    write_text_file(share_ + "/f", "hello\n");
    ASSERT_EQ(::chown(share_.c_str(), kOwner, kOwner), 0);
    ASSERT_EQ(::chown((share_ + "/f").c_str(), kOwner, kOwner), 0);
    ASSERT_EQ(::chown(vm_.c_str(), kJailUid, kJailUid), 0);
    ASSERT_EQ(std::system(("cp /bin/busybox " + vm_ + "/busybox").c_str()), 0)
        << "busybox (a static binary) is needed to look inside the jail";
    const std::string ids = std::to_string(kJailUid);
    jail_ = std::make_unique<RunningProcess>(std::vector<std::string>{
        carapace_binary(), "jail", "--id", "attach-" + std::to_string(getpid()), "--exec-file",
        "/bin/busybox", "--uid", ids, "--gid", ids, "--chroot-base", base_ + "/jails", "--bind",
        vm_, "--", "sleep", "60"});
    ASSERT_TRUE(jail_->started());
    for (int i = 0; i < 200 && inner_ <= 0; ++i) {
      inner_ = proc_first_child(jail_->pid());
      if (inner_ <= 0) ::usleep(10'000);
    }
    ASSERT_GT(inner_, 0) << "the jailed process did not start";
  }
  void TearDown() override {
    if (jail_) {
      ::kill(jail_->pid(), SIGTERM);
      jail_->finish(std::chrono::seconds(10));
    }
    (void)std::system(("rm -rf '" + base_ + "'").c_str());
  }

  // `carapace jail attach` with the share open on fd 3.
  ProcessResult attach(const std::string& source, std::vector<std::string> extra) {
    std::vector<std::string> argv{"/bin/sh", "-c",
                                  "exec \"$0\" jail attach --pid " + std::to_string(inner_) +
                                      " --source-fd 3 \"$@\" 3<'" + source + "'",
                                  carapace_binary()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv);
  }
  // A busybox shell command inside the jail's mount namespace, as the jail's uid. The jail has
  // no other programs: commands are busybox applets, named with "$B".
  ProcessResult inside(const std::string& cmd) {
    const std::string ids = std::to_string(kJailUid);
    return run_process({"/usr/bin/nsenter", "-t", std::to_string(inner_), "-m", "-S", ids, "-G",
                        ids, vm_ + "/busybox", "sh", "-c", "B=" + vm_ + "/busybox; " + cmd});
  }

  std::string base_, vm_, share_;
  std::unique_ptr<RunningProcess> jail_;
  int inner_ = -1;
};

TEST_F(JailAttachTest, SecurityCheck68_TheFolderIsIdMappedInsideTheJailOnly) {
  auto r = attach(share_, {"--target", vm_ + "/fs0", "--idmap",
                           std::to_string(kOwner) + ":" + std::to_string(kOwner) + ":" +
                               std::to_string(kJailUid) + ":" + std::to_string(kJailUid)});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  // Inside: the owner's file shows as the jail's own, and the jail can write it and add one.
  auto w = inside("$B stat -c %u " + vm_ + "/fs0/f; echo more >> " + vm_ + "/fs0/f && echo new > " +
                  vm_ + "/fs0/g && echo written");
  EXPECT_EQ(w.exit_code, 0) << describe(w);
  EXPECT_NE(w.out.find(std::to_string(kJailUid)), std::string::npos) << w.out;
  EXPECT_NE(w.out.find("written"), std::string::npos) << describe(w);
  // On the host: the bytes are there, and what the jail made belongs to the folder's owner.
  EXPECT_EQ(read_text_file(share_ + "/f"), "hello\nmore\n");
  struct stat st {};
  ASSERT_EQ(::stat((share_ + "/g").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kOwner);
  EXPECT_EQ(st.st_gid, kOwner);
  // The host's own view of the mount point is untouched: nothing was mounted there.
  ASSERT_EQ(::stat((vm_ + "/fs0/f").c_str(), &st), -1);
}

TEST_F(JailAttachTest, SecurityCheck68_ReadOnlyIsTheKernels) {
  auto r = attach(share_, {"--target", vm_ + "/fs1", "--read-only"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  auto w = inside("$B cat " + vm_ + "/fs1/f; echo x > " + vm_ + "/fs1/h");
  EXPECT_NE(w.exit_code, 0);
  EXPECT_NE(w.out.find("hello"), std::string::npos) << describe(w);
  EXPECT_NE(w.err.find("Read-only file system"), std::string::npos) << describe(w);
  struct stat st {};
  EXPECT_EQ(::stat((share_ + "/h").c_str(), &st), -1);
}

TEST_F(JailAttachTest, SecurityCheck68_ASymlinkedTargetOrABadSourceIsRefused) {
  // The jail owns the folder the mount point sits in: a mount point swapped for a symlink to
  // elsewhere is not followed.
  ASSERT_EQ(::rmdir((vm_ + "/fs1").c_str()), 0);
  ASSERT_EQ(::symlink("/", (vm_ + "/fs1").c_str()), 0);
  auto r = attach(share_, {"--target", vm_ + "/fs1"});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_NE(r.err.find("open the target"), std::string::npos) << describe(r);
  // A file is not a folder to share.
  auto f = attach(share_ + "/f", {"--target", vm_ + "/fs0"});
  EXPECT_EQ(f.exit_code, 1) << describe(f);
  EXPECT_NE(f.err.find("not a directory"), std::string::npos) << describe(f);
  // Bad flags: one line, status 2.
  for (std::vector<std::string> bad : {std::vector<std::string>{"--target", "rel"},
                                       {"--target", vm_ + "/fs0", "--idmap", "1:2:3"},
                                       {"--bogus", "1"}}) {
    auto b = attach(share_, bad);
    EXPECT_EQ(b.exit_code, 2) << describe(b);
  }
  auto w = inside("$B ls " + vm_ + "/fs0");
  EXPECT_EQ(w.out, "") << "nothing was mounted";
}

}  // namespace
}  // namespace carapace::testing
