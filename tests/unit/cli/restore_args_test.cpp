// `carapace restore` flags and the per-clone identities (docs/security.md #25).
#include "vmm/cli/restore_args.h"

#include <gtest/gtest.h>

#include <set>

namespace carapace {
namespace {

Result<RestoreArgs> parse(std::vector<std::string> args) {
  return parse_restore_args(args);
}

TEST(RestoreArgs, Minimal) {
  auto a = parse({"--snapshot", "/s"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->snapshot_dir, "/s");
  EXPECT_EQ(a->clones, 1u);
  EXPECT_DOUBLE_EQ(a->agent_timeout_s, 10);
}

// Hosts that emulate virtualization (the nested test harness) give the clones' agents longer to
// answer the restore notice; the default suits real hardware.
TEST(RestoreArgs, AgentTimeoutIsASetting) {
  auto a = parse({"--snapshot", "/s", "--vsock", "cid=3,uds=/tmp/v", "--agent-token", "ab",
                  "--agent-timeout", "90"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_DOUBLE_EQ(a->agent_timeout_s, 90);
}

TEST(RestoreArgs, RefusesBadInputWithOneLine) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {},
           {"--snapshot"},
           {"--snapshot", ""},
           {"--snapshot", "/s", "--clones", "0"},
           {"--snapshot", "/s", "--clones", "1025"},
           {"--snapshot", "/s", "--clones", "-1"},
           {"--snapshot", "/s", "--kernel", "k"},
           {"--snapshot", "/s", "--console", "tty"},
           {"--snapshot", "/s", "--timeout", "0"},
           {"--snapshot", "/s", "--agent-timeout", "0"},
           {"--snapshot", "/s", "--agent-timeout", "soon"},
       }) {
    auto a = parse(args);
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.error().kind, ErrorKind::kInvalidInput);
    EXPECT_EQ(a.error().message.find('\n'), std::string::npos);
  }
}

// --paused: restored with the vCPUs parked until PUT /vm/resume (the daemon's pool); it needs the
// control API to be resumed at all, and the restore notice would wait on a guest that cannot run.
TEST(RestoreArgs, PausedNeedsTheControlApi) {
  EXPECT_FALSE(parse({"--snapshot", "/s"})->start_paused);
  auto a = parse({"--snapshot", "/s", "--paused", "--api-sock", "/tmp/api"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_TRUE(a->start_paused);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--snapshot", "/s", "--paused"},
           {"--snapshot", "/s", "--paused", "--api-sock", "/tmp/api", "--vsock", "cid=3,uds=/tmp/v",
            "--agent-token", "ab"},
       }) {
    auto bad = parse(args);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().kind, ErrorKind::kInvalidInput);
    EXPECT_NE(bad.error().message.find("--paused"), std::string::npos) << bad.error().message;
  }
}

TEST(RestoreArgs, OneCloneKeepsTheFlagsAsGiven) {
  auto a = parse({"--snapshot", "/s", "--vsock", "cid=7,uds=/run/v.sock", "--console",
                  "file:/tmp/c.log", "--drive", "path=/d.img"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  MachineConfig c = clone_config(*a, 0);
  EXPECT_EQ(c.devices.vsock->guest_cid, 7u);
  EXPECT_EQ(c.devices.vsock->uds_path, "/run/v.sock");
  EXPECT_EQ(c.console.path, "/tmp/c.log");
}

// docs/security.md #25: every clone gets its own CID, socket paths, MAC, overlay and console.
TEST(RestoreArgs, ClonesGetDistinctIdentities) {
  auto a = parse({"--snapshot", "/s", "--clones", "20", "--vsock", "cid=100,uds=/run/v.sock",
                  "--net", "unix=/run/n.sock,mac=02:00:00:00:00:fe", "--net", "tap=tap0", "--drive",
                  "path=/base.img,overlay=/ov.img", "--drive", "path=/ro.img,ro=on", "--console",
                  "file:/tmp/c.log"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  std::set<uint32_t> cids;
  std::set<std::string> paths;
  std::set<std::array<uint8_t, 6>> macs;
  for (uint32_t i = 0; i < 20; ++i) {
    MachineConfig c = clone_config(*a, i);
    const std::string s = "." + std::to_string(i);
    EXPECT_EQ(c.devices.vsock->guest_cid, 100 + i);
    EXPECT_EQ(c.devices.vsock->uds_path, "/run/v.sock" + s);
    EXPECT_EQ(c.devices.nets[0].unix_path, "/run/n.sock" + s);
    EXPECT_EQ(c.devices.nets[1].tap_name, "tap0" + s);
    EXPECT_EQ(c.devices.drives[0].overlay_path, "/ov.img" + s);
    EXPECT_EQ(c.devices.drives[0].path, "/base.img");
    EXPECT_EQ(c.console.path, "/tmp/c.log" + s);
    cids.insert(c.devices.vsock->guest_cid);
    paths.insert(c.devices.vsock->uds_path);
    macs.insert(c.devices.nets[0].mac);
    EXPECT_EQ(c.devices.nets[0].mac[0], 0x02);  // the OUI part never changes
  }
  EXPECT_EQ(cids.size(), 20u);
  EXPECT_EQ(paths.size(), 20u);
  EXPECT_EQ(macs.size(), 20u);
  // 0xfe + 2 carries into the next byte instead of wrapping.
  auto mac2 = clone_config(*a, 2).devices.nets[0].mac;
  EXPECT_EQ(mac2[4], 0x01);
  EXPECT_EQ(mac2[5], 0x00);
}

TEST(RestoreArgs, RefusesCloneIdentitiesThatWouldCollide) {
  // A writable disk shared by clones.
  EXPECT_FALSE(parse({"--snapshot", "/s", "--clones", "2", "--drive", "path=/d.img"}).ok());
  EXPECT_TRUE(parse({"--snapshot", "/s", "--clones", "1", "--drive", "path=/d.img"}).ok());
  // CIDs past the top.
  EXPECT_FALSE(
      parse({"--snapshot", "/s", "--clones", "3", "--vsock", "cid=4294967293,uds=/v"}).ok());
  EXPECT_TRUE(
      parse({"--snapshot", "/s", "--clones", "2", "--vsock", "cid=4294967293,uds=/v"}).ok());
  // A MAC whose low 24 bits would overflow into the OUI.
  EXPECT_FALSE(
      parse({"--snapshot", "/s", "--clones", "2", "--net", "unix=/n,mac=02:00:00:ff:ff:ff"}).ok());
  // A TAP name past IFNAMSIZ once suffixed.
  EXPECT_FALSE(parse({"--snapshot", "/s", "--clones", "11", "--net", "tap=abcdefghijklm"}).ok());
}

}  // namespace
}  // namespace carapace
