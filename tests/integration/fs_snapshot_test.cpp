// virtio-fs across snapshots, through the real `carapace` binary over KVM: a VM with an unbound
// device is snapshotted while the guest waits for a share, and restored with the folder given on
// the command line or bound over the control API of a paused restore (how a pooled VM gets its
// workspace); a snapshot while the guest has a session is refused and changes nothing
// (docs/security.md #61); bad bind requests on a real VMM (#62); restores whose devices do not
// match the snapshot's (#63).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "common/http/http_client.h"
#include "tests/integration/fs_share.h"
#include "tests/integration/testguest_harness.h"

namespace carapace::testing {
namespace {

struct Api {
  std::string sock;
  std::pair<int, std::string> call(const std::string& method, const std::string& target,
                                   const std::string& body = "") {
    auto r = http::http_request(sock, method, target, body);
    if (!r.ok()) return {-1, r.error().describe()};
    return {r->status, r->body};
  }
};

std::vector<std::string> fs_run(const std::string& words, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {carapace_binary(), "run",       "--kernel",
                                   testguest_image(), "--cmdline", "testguest.run=fs " + words,
                                   "--timeout",       "60"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// A parent VM whose fs device is unbound, snapshotted (and left paused) while the guest retries
// INIT; the tests restore it. Nothing in the snapshot names a host fd.
class FsSnapshotKvm : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kvm_usable());
    ASSERT_TRUE(s_.ok());
    snap_ = s_.root() + "/snap";
    Api api{s_.root() + "/parent.api"};
    RunningProcess parent(
        fs_run("testguest.fs.wait-bound", {"--fs", "tag=work", "--api-sock", api.sock}));
    ASSERT_TRUE(parent.wait_for_output("fs unbound (INIT errno 107)", std::chrono::seconds(60)))
        << parent.out() << parent.err();
    auto [st, body] = api.call("GET", "/fs");
    EXPECT_EQ(st, 200);
    EXPECT_NE(body.find("\"path\":null"), std::string::npos) << body;
    std::tie(st, body) =
        api.call("PUT", "/snapshot/create", "{\"dir\": \"" + snap_ + "\", \"resume\": false}");
    ASSERT_EQ(st, 200) << body;
  }

  FsShare s_;
  std::string snap_;
};

TEST_F(FsSnapshotKvm, AnUnboundDeviceIsBoundByTheRestoreFlags) {
  auto r = run_process(
      {carapace_binary(), "restore", "--snapshot", snap_, "--fs", s_.flag("rw"), "--timeout", "60"},
      std::chrono::seconds(90));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(has_line(r.out, "TESTGUEST PASS fs")) << describe(r);
  EXPECT_TRUE(read_and_escapes_refused(r.out)) << describe(r);
  EXPECT_EQ(read_text_file(s_.file("guest.txt")), kWrittenByGuest);
  EXPECT_FALSE(s_.exists("victim.txt"));
}

// The daemon's hand-out: restore paused with the device unbound, bind over the control API,
// then resume. Bad binds on the way are refused and change nothing (docs/security.md #62).
TEST_F(FsSnapshotKvm, SecurityCheck62_APausedRestoreIsBoundOverTheControlApi) {
  Api api{s_.root() + "/clone.api"};
  RunningProcess clone({carapace_binary(), "restore", "--snapshot", snap_, "--fs", "tag=work",
                        "--paused", "--api-sock", api.sock, "--timeout", "60"});
  int st = -1;
  std::string body;
  for (int i = 0; i < 500 && st != 200; ++i) {
    std::tie(st, body) = api.call("GET", "/vm");
    if (st != 200) usleep(10000);
  }
  ASSERT_EQ(st, 200) << body;
  EXPECT_NE(body.find("\"paused\""), std::string::npos) << body;
  std::tie(st, body) = api.call("PUT", "/fs/nope", "{\"path\": \"" + s_.share() + "\"}");
  EXPECT_EQ(st, 400) << body;
  std::tie(st, body) = api.call("PUT", "/fs/work", "{\"path\": \"" + s_.file("hello.txt") + "\"}");
  EXPECT_EQ(st, 400) << body;
  EXPECT_NE(body.find("Not a directory"), std::string::npos) << body;
  std::tie(st, body) = api.call("PUT", "/fs/work", "{\"path\": \"" + s_.file("escape-dir") + "\"}");
  EXPECT_EQ(st, 400) << body;  // a symlink to a folder is not a folder
  std::tie(st, body) =
      api.call("PUT", "/fs/work", "{\"path\": \"" + s_.share() + "\", \"mode\": \"all\"}");
  EXPECT_EQ(st, 400) << body;
  std::tie(st, body) = api.call("GET", "/fs");
  EXPECT_NE(body.find("\"path\":null"), std::string::npos) << body;
  std::tie(st, body) =
      api.call("PUT", "/fs/work", "{\"path\": \"" + s_.share() + "\", \"mode\": \"rw-nodelete\"}");
  ASSERT_EQ(st, 200) << body;
  EXPECT_NE(body.find("\"mode\":\"rw-nodelete\""), std::string::npos) << body;
  std::tie(st, body) = api.call("PUT", "/vm/resume");
  ASSERT_EQ(st, 200) << body;
  ProcessResult r = clone.finish(std::chrono::seconds(90));
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(has_line(r.out, "TESTGUEST PASS fs")) << describe(r);
  EXPECT_TRUE(has_line(r.out, "testguest: fs unlink victim.txt errno 1")) << describe(r);
  EXPECT_EQ(read_text_file(s_.file("guest.txt")), kWrittenByGuest);
  EXPECT_EQ(read_text_file(s_.file("victim.txt")), "victim");
}

// docs/security.md #63: the snapshot's fs devices must be given again, in order, with their
// tags: one line, status 2, no VM.
TEST_F(FsSnapshotKvm, SecurityCheck63_ARestoreWithOtherDevicesIsRefused) {
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{}, {"--fs", "tag=other"}, {"--fs", "tag=work", "--fs", "tag=x"}}) {
    std::vector<std::string> argv = {carapace_binary(), "restore", "--snapshot", snap_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto r = run_process(argv, std::chrono::seconds(30));
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << describe(r);
    EXPECT_EQ(r.out.find("TESTGUEST"), std::string::npos) << describe(r);
  }
}

// docs/security.md #61: while the guest holds a session the snapshot is refused with one line
// and the VM runs on as before; once the guest has sent DESTROY the snapshot is taken.
TEST(FsSessionSnapshotKvm, SecurityCheck61_ASnapshotWhileMountedIsRefused) {
  ASSERT_TRUE(kvm_usable());
  FsShare s;
  ASSERT_TRUE(s.ok());
  Api api{s.root() + "/api"};
  RunningProcess vm(fs_run("testguest.fs.hold", {"--fs", s.flag("rw"), "--api-sock", api.sock}));
  ASSERT_TRUE(vm.wait_for_output("fs session live", std::chrono::seconds(60)))
      << vm.out() << vm.err();
  const std::string snap = s.root() + "/snap";
  auto [st, body] = api.call("PUT", "/snapshot/create", "{\"dir\": \"" + snap + "\"}");
  EXPECT_EQ(st, 400) << body;
  EXPECT_NE(body.find("the guest has the share mounted"), std::string::npos) << body;
  EXPECT_FALSE(std::filesystem::exists(snap));
  std::tie(st, body) = api.call("GET", "/vm");
  EXPECT_NE(body.find("\"running\""), std::string::npos) << body;
  std::tie(st, body) = api.call("GET", "/fs");
  EXPECT_NE(body.find("\"mounted\":true"), std::string::npos) << body;
  // A mounted share is not rebound either.
  std::tie(st, body) = api.call("PUT", "/fs/work", "{\"path\": \"" + s.outside() + "\"}");
  EXPECT_EQ(st, 409) << body;

  write_text_file(s.file("go"), "");  // the guest ends its session
  ASSERT_TRUE(vm.wait_for_output("fs session ended (DESTROY errno 0)", std::chrono::seconds(60)))
      << vm.out() << vm.err();
  std::tie(st, body) = api.call("PUT", "/snapshot/create", "{\"dir\": \"" + snap + "\"}");
  EXPECT_EQ(st, 200) << body;
  EXPECT_TRUE(std::filesystem::exists(snap + "/state"));
  kill(vm.pid(), SIGKILL);
  vm.finish(std::chrono::seconds(10));
}

}  // namespace
}  // namespace carapace::testing
