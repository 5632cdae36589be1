// virtio-fs through the test guest's FUSE driver, over KVM with the real `carapace` binary (under
// its seccomp filters, the fs thread's own among them): the fs scenario against a prepared share
// in each mode, checked in the guest's lines and in the host folder afterwards.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>

#include "tests/integration/fs_share.h"
#include "tests/integration/virtio_test_support.h"

namespace carapace::testing {
namespace {

bool is_dir(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

TEST(VirtioFsKvm, ReadWriteShareTakesTheGuestsChanges) {
  ASSERT_TRUE(kvm_usable());
  FsShare s;
  ASSERT_TRUE(s.ok());
  auto r = run_virtio("fs", "", {"--fs", s.flag("rw")});
  ASSERT_TRUE(passed(r, "fs"));
  EXPECT_TRUE(read_and_escapes_refused(r.out)) << describe(r);
  for (const char* line :
       {"testguest: fs create guest.txt errno 0", "testguest: fs write guest.txt errno 0 21 bytes",
        "testguest: fs mkdir guest-dir errno 0", "testguest: fs unlink victim.txt errno 0",
        "testguest: fs readdir: escape escape-dir guest-dir guest.txt hello.txt",
        "testguest: fs destroy errno 0"})
    EXPECT_TRUE(has_line(r.out, line)) << line << "\n" << describe(r);
  EXPECT_EQ(read_text_file(s.file("guest.txt")), kWrittenByGuest);
  EXPECT_TRUE(is_dir(s.file("guest-dir")));
  EXPECT_FALSE(s.exists("victim.txt"));
  EXPECT_EQ(read_text_file(s.file("hello.txt")), kHello);
  EXPECT_TRUE(outside_untouched(s));
  EXPECT_EQ(r.err, "") << describe(r);
}

// docs/security.md #59 end to end: every change is EROFS and the folder stays as it was.
TEST(VirtioFsKvm, ReadOnlyShareRefusesEveryChange) {
  ASSERT_TRUE(kvm_usable());
  FsShare s;
  ASSERT_TRUE(s.ok());
  auto r = run_virtio("fs", "", {"--fs", s.flag("ro")});
  ASSERT_TRUE(passed(r, "fs"));
  EXPECT_TRUE(read_and_escapes_refused(r.out)) << describe(r);
  for (const char* line :
       {"testguest: fs create guest.txt errno 30", "testguest: fs mkdir guest-dir errno 30",
        "testguest: fs unlink victim.txt errno 30",
        "testguest: fs readdir: escape escape-dir hello.txt victim.txt"})
    EXPECT_TRUE(has_line(r.out, line)) << line << "\n" << describe(r);
  EXPECT_FALSE(s.exists("guest.txt"));
  EXPECT_FALSE(s.exists("guest-dir"));
  EXPECT_EQ(read_text_file(s.file("victim.txt")), "victim");
  EXPECT_TRUE(outside_untouched(s));
}

// rw-nodelete: new files and folders go in, nothing that exists goes away (EPERM).
TEST(VirtioFsKvm, NoDeleteShareKeepsWhatExists) {
  ASSERT_TRUE(kvm_usable());
  FsShare s;
  ASSERT_TRUE(s.ok());
  auto r = run_virtio("fs", "", {"--fs", s.flag("rw-nodelete")});
  ASSERT_TRUE(passed(r, "fs"));
  EXPECT_TRUE(read_and_escapes_refused(r.out)) << describe(r);
  for (const char* line :
       {"testguest: fs create guest.txt errno 0", "testguest: fs write guest.txt errno 0 21 bytes",
        "testguest: fs mkdir guest-dir errno 0", "testguest: fs unlink victim.txt errno 1"})
    EXPECT_TRUE(has_line(r.out, line)) << line << "\n" << describe(r);
  EXPECT_EQ(read_text_file(s.file("guest.txt")), kWrittenByGuest);
  EXPECT_TRUE(is_dir(s.file("guest-dir")));
  EXPECT_EQ(read_text_file(s.file("victim.txt")), "victim");
  EXPECT_TRUE(outside_untouched(s));
}

// The device comes after every other one (its slot follows rng's), and two shares are two
// devices with their own tags; the scenario drives the first.
TEST(VirtioFsKvm, SharesFollowTheOtherDevices) {
  ASSERT_TRUE(kvm_usable());
  FsShare s;
  ASSERT_TRUE(s.ok());
  auto r = run_virtio("fs", "", {"--fs", s.flag("ro"), "--rng", "--fs", "tag=second"});
  ASSERT_TRUE(passed(r, "fs"));
  EXPECT_TRUE(has_line(r.out, "testguest: virtio 0xd0000000 irq 5: rng (id 4, version 2)"))
      << describe(r);
  EXPECT_TRUE(has_line(r.out, "testguest: virtio 0xd0001000 irq 6: fs (id 26, version 2)"))
      << describe(r);
  EXPECT_TRUE(has_line(r.out, "testguest: virtio 0xd0002000 irq 7: fs (id 26, version 2)"))
      << describe(r);
}

TEST(VirtioFsKvm, MissingDeviceFailsInGuest) {
  ASSERT_TRUE(kvm_usable());
  auto r = run_virtio("fs", "", {});
  EXPECT_TRUE(has_line(r.out, "TESTGUEST FAIL fs: no virtio-fs device (run with --fs)"))
      << describe(r);
}

// An unbound device answers INIT with ENOTCONN: the guest's mount goes nowhere.
TEST(VirtioFsKvm, AnUnboundDeviceRefusesInit) {
  ASSERT_TRUE(kvm_usable());
  auto r = run_virtio("fs", "", {"--fs", "tag=later"});
  EXPECT_TRUE(has_line(r.out, "testguest: fs INIT errno 107")) << describe(r);
  EXPECT_TRUE(has_line(r.out, "TESTGUEST FAIL fs: FUSE_INIT failed")) << describe(r);
}

// A folder that does not open as a directory is bad input: one line, exit status 2, no VM.
TEST(VirtioFsKvm, AShareThatIsNotADirectoryIsRefused) {
  ASSERT_TRUE(kvm_usable());
  FsShare s;
  ASSERT_TRUE(s.ok());
  for (const std::string& path : {s.file("hello.txt"), s.file("escape-dir"), s.file("missing")}) {
    auto r = run_virtio("fs", "", {"--fs", "tag=work,path=" + path});
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_EQ(r.out.find("TESTGUEST START"), std::string::npos) << describe(r);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << describe(r);
    EXPECT_NE(r.err.find("opening the shared folder " + path), std::string::npos) << describe(r);
  }
}

}  // namespace
}  // namespace carapace::testing
