// The restore notice over real KVM (docs/security.md #25): a test guest listening on the
// agent's vsock port is frozen; each clone gets its own vsock CID and socket, a TRANSPORT_RESET,
// and from the VMM a post_restore with the clock, fresh entropy and its own token.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "tests/integration/counter_support.h"
#include "vmm/machine/machine.h"
#include "vmm/pool/clone_source.h"
#include "vmm/pool/restore_notice.h"

namespace carapace::testing {
namespace {

MachineConfig notice_config(const std::string& name, uint32_t cid) {
  MachineConfig c;
  c.kernel_path = testguest_image();
  c.cmdline = "testguest.run=restore-notice";
  c.mem_bytes = 128ull << 20;
  c.console.kind = ConsoleKind::kFile;
  c.console.path = ::testing::TempDir() + name + ".console";
  c.timeout_seconds = 60;
  c.devices.vsock = VsockDeviceConfig{cid, ::testing::TempDir() + name + ".vsock"};
  return c;
}

TEST(RestoreNoticeKvm, EveryCloneGetsItsOwnIdentityAndNotice) {
  ASSERT_TRUE(kvm_usable());
  MachineConfig parent_config = notice_config("notice-parent", 3);
  unlink(parent_config.devices.vsock->uds_path.c_str());
  auto parent = Machine::build(parent_config);
  ASSERT_TRUE(parent.ok()) << parent.error().describe();
  (*parent)->start();
  ASSERT_TRUE(wait_for_console(parent_config.console.path, "restore-notice waiting"))
      << read_text_file(parent_config.console.path);
  auto source = capture_clone_source(**parent);
  ASSERT_TRUE(source.ok()) << source.error().describe();
  (*parent)->stop(VmOutcome::kGuestReset, "frozen");
  (*parent)->wait();

  constexpr int kClones = 3;
  std::set<std::string> tokens;
  for (int i = 0; i < kClones; ++i) {
    MachineConfig config = notice_config("notice-clone" + std::to_string(i), 10 + i);
    unlink(config.devices.vsock->uds_path.c_str());
    auto clone = restore_clone(**source, config);
    ASSERT_TRUE(clone.ok()) << clone.error().describe();
    (*clone)->start();
    auto token = generate_sandbox_token();
    ASSERT_TRUE(token.ok());
    EXPECT_TRUE(tokens.insert(*token).second);
    auto applied =
        send_restore_notice(config.devices.vsock->uds_path,
                            RestoreNotice{"snapshot-token", *token, ""}, std::chrono::seconds(20));
    ASSERT_TRUE(applied.ok()) << applied.error().describe() << "\n"
                              << read_text_file(config.console.path);
    EXPECT_EQ(applied->size(), 3u);
    EXPECT_EQ((*clone)->wait(), VmOutcome::kGuestReset) << (*clone)->outcome_detail();
    const std::string out = read_text_file(config.console.path);
    // The guest saw the reset, took its new CID, and got this clone's token.
    EXPECT_NE(out.find("restore notice cid " + std::to_string(10 + i) + " resets 1 "),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("token " + *token), std::string::npos) << out;
    EXPECT_NE(out.find("TESTGUEST PASS restore-notice"), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace carapace::testing
