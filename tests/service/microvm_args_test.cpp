// The microvm back end's pure parts: the command lines it spawns, per-VM paths, CIDs, tokens.
#include "vmm/service/microvm_args.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace carapace::service {
namespace {

bool has_pair(const std::vector<std::string>& argv, const std::string& flag,
              const std::string& value) {
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == flag && argv[i + 1] == value) return true;
  return false;
}

TEST(MicrovmArgs, BootCommandLineCarriesDevicesAndToken) {
  TemplateSpec spec;
  spec.kernel = "/k";
  spec.rootfs = "/r.ext4";
  spec.boot_args = "testguest.run=agent-ping";
  spec.vcpus = 2;
  spec.mem_mib = 128;
  VmPaths p = vm_paths("/state/tpl", "boot");
  auto argv = boot_argv(spec, "/bin/carapace", p, 7, "abcd");
  EXPECT_EQ(argv[0], "/bin/carapace");
  EXPECT_EQ(argv[1], "run");
  EXPECT_TRUE(has_pair(argv, "--kernel", "/k"));
  EXPECT_TRUE(has_pair(argv, "--drive", "path=/r.ext4,ro=on"));
  EXPECT_TRUE(has_pair(argv, "--vcpus", "2"));
  EXPECT_TRUE(has_pair(argv, "--mem", "128"));
  EXPECT_TRUE(has_pair(argv, "--vsock", "cid=7,uds=/state/tpl/boot.vsock"));
  EXPECT_TRUE(has_pair(argv, "--api-sock", "/state/tpl/boot.api"));
  EXPECT_TRUE(has_pair(argv, "--console", "file:/state/tpl/boot.console,max=1048576"));
  EXPECT_TRUE(has_pair(argv, "--cmdline", "testguest.run=agent-ping carapace.token=abcd"));
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--initrd"), 0);
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--no-seccomp"), 0);
  auto unfiltered = boot_argv(spec, "/bin/carapace", p, 7, "abcd", /*seccomp=*/false);
  EXPECT_EQ(std::count(unfiltered.begin(), unfiltered.end(), "--no-seccomp"), 1);
}

TEST(MicrovmArgs, RestoreIsPausedWithItsOwnIdentity) {
  TemplateSpec spec;
  spec.kernel = "/k";
  VmPaths p = vm_paths("/s", "i3");
  auto argv = restore_argv(spec, "/bin/carapace", "/s/snapshot", p, 42);
  EXPECT_EQ(argv[1], "restore");
  EXPECT_TRUE(has_pair(argv, "--snapshot", "/s/snapshot"));
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--paused"), argv.end());
  EXPECT_TRUE(has_pair(argv, "--vsock", "cid=42,uds=/s/i3.vsock"));
  EXPECT_TRUE(has_pair(argv, "--api-sock", "/s/i3.api"));
  // No drive in the template, none at restore (the device count must match the snapshot).
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--drive"), 0);
  // The token never goes on a restore's command line.
  for (const auto& a : argv)
    EXPECT_EQ(a.find("token"), std::string::npos) << a;
}

TEST(MicrovmArgs, CidsAreUniqueAndSkipReservedOnes) {
  CidAllocator a(0);
  std::set<uint32_t> seen;
  for (int i = 0; i < 1000; ++i) {
    uint32_t cid = a.next();
    EXPECT_GE(cid, 3u);
    EXPECT_TRUE(seen.insert(cid).second) << cid;
  }
  CidAllocator top(0xfffffffdu);
  EXPECT_EQ(top.next(), 0xfffffffdu);
  EXPECT_EQ(top.next(), 0xfffffffeu);
  EXPECT_EQ(top.next(), 3u);  // wraps past VMADDR_CID_ANY (0xffffffff)
}

TEST(MicrovmArgs, LongStateFoldersAreRefused) {
  EXPECT_TRUE(check_dir_fits_sockets("/var/lib/carapace/templates/tpl-0123456789ab").ok());
  auto bad = check_dir_fits_sockets("/" + std::string(100, 'x'));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::kInvalidInput);
}

TEST(MicrovmArgs, RandomHexIsFreshAndHex) {
  auto a = random_hex(16), b = random_hex(16);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 32u);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(a->find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(MicrovmArgs, FileTailIsOneLine) {
  EXPECT_EQ(file_tail("/nonexistent/file"), "(none)");
}

}  // namespace
}  // namespace carapace::service
