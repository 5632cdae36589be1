// The microvm back end's pure parts: the command lines it spawns, per-VM paths, CIDs, tokens.
#include "daemon/backends/microvm_args.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>

namespace carapace::service {
namespace {

bool has_pair(const std::vector<std::string>& argv, const std::string& flag,
              const std::string& value) {
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == flag && argv[i + 1] == value) return true;
  return false;
}

// `argv` is `program command ...` and holds each flag of `flags` followed by its value.
void expect_command(const std::vector<std::string>& argv, const std::string& program,
                    const std::string& command,
                    const std::vector<std::pair<std::string, std::string>>& flags) {
  ASSERT_GE(argv.size(), 2u);
  EXPECT_EQ(argv[0], program);
  EXPECT_EQ(argv[1], command);
  for (const auto& [flag, value] : flags)
    EXPECT_TRUE(has_pair(argv, flag, value)) << flag << " " << value;
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
  expect_command(argv, "/bin/carapace", "run",
                 {{"--kernel", "/k"},
                  {"--drive", "path=/r.ext4,ro=on"},
                  {"--vcpus", "2"},
                  {"--mem", "128"},
                  {"--vsock", "cid=7,uds=/state/tpl/boot/vsock"},
                  {"--api-sock", "/state/tpl/boot/api"},
                  {"--console", "file:/state/tpl/boot/console,max=1048576"},
                  {"--cmdline", "testguest.run=agent-ping carapace.token=abcd"}});
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
  EXPECT_TRUE(has_pair(argv, "--vsock", "cid=42,uds=/s/i3/vsock"));
  EXPECT_TRUE(has_pair(argv, "--api-sock", "/s/i3/api"));
  // No drive in the template, none at restore (the device count must match the snapshot).
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--drive"), 0);
  // The token never goes on a restore's command line.
  for (const auto& a : argv)
    EXPECT_EQ(a.find("token"), std::string::npos) << a;
}

TEST(MicrovmArgs, EachVmHasItsOwnFolder) {
  VmPaths p = vm_paths("/s", "i3");
  EXPECT_EQ(p.dir, "/s/i3");
  for (const std::string& f : {p.api_sock, p.vsock_uds, p.console, p.log, p.snapshot_out})
    EXPECT_EQ(f.rfind("/s/i3/", 0), 0u) << f;
}

// A snapshot written into a tmpfs/ramfs state folder stays in RAM, charged to the VMM's memory
// cgroup on top of the guest's RAM it copies: found on the nested rung, where a fork of a sandbox
// that had touched half its RAM got its parent VMM OOM-killed. There the limit holds one more
// guest RAM; on a disk the written pages are page cache the cgroup can reclaim.
TEST(MicrovmArgs, MemoryLimitHoldsASnapshotWrittenToMemory) {
  TemplateSpec spec;
  spec.mem_mib = 1024;
  VmPaths p = vm_paths("/s/tpl-1", "i3");
  EXPECT_EQ(vm_jail(spec, "/s/tpl-1", "t", "i3", p, {}, 261234, false).mem_limit_mib,
            1024 + kVmmMemOverheadMib);
  EXPECT_EQ(vm_jail(spec, "/s/tpl-1", "t", "i3", p, {}, 261234, true).mem_limit_mib,
            2 * 1024 + kVmmMemOverheadMib);
  EXPECT_TRUE(on_memory_filesystem("/dev/shm"));  // tmpfs on every Linux with glibc's shm_open
  EXPECT_FALSE(on_memory_filesystem("/proc"));
  EXPECT_FALSE(on_memory_filesystem("/nonexistent/folder"));
}

// docs/security.md #32: the jail a daemon-made VMM runs in: its own uid, a new network namespace,
// /proc of its own processes, limits sized from the template, read-only binds for what it reads
// and its folder as the only writable one.
TEST(MicrovmArgs, JailedCommandLineWrapsTheVmm) {
  TemplateSpec spec;
  spec.kernel = "/k";
  spec.rootfs = "/r.ext4";
  spec.vcpus = 2;
  spec.mem_mib = 256;
  VmPaths p = vm_paths("/s/tpl-1", "i3");
  VmJail j = vm_jail(spec, "/s/tpl-1", "tpl-1-abcd", "i3", p, {"/s/tpl-1/snapshot", "/r.ext4", ""},
                     261234, /*snapshots_in_memory=*/false);
  EXPECT_EQ(j.id, "vm-tpl-1-abcd-i3");
  EXPECT_EQ(j.chroot_base, "/s/tpl-1/jails");
  EXPECT_EQ(j.dir(), "/s/tpl-1/jails/vm-tpl-1-abcd-i3");
  EXPECT_EQ(j.mem_limit_mib, 256 + kVmmMemOverheadMib);
  EXPECT_EQ(j.cpu_quota_pct, 300u);
  EXPECT_EQ(j.fsize_mib, 256u + 64);
  EXPECT_EQ(j.nofile, kVmOpenFiles);  // one open file per inode a guest holds on its shares
  EXPECT_EQ(j.binds,
            (std::vector<std::string>{"/s/tpl-1/snapshot:ro", "/r.ext4:ro", "/s/tpl-1/i3"}));
  auto vmm = restore_argv(spec, "/bin/carapace", "/s/tpl-1/snapshot", p, 9);
  auto argv = jailed_argv(j, "/bin/carapace", vmm);
  expect_command(argv, "/bin/carapace", "jail",
                 {{"--id", "vm-tpl-1-abcd-i3"},
                  {"--exec-file", "/bin/carapace"},
                  {"--uid", "261234"},
                  {"--gid", "261234"},
                  {"--netns", "new"},
                  {"--proc", "pids"},
                  {"--mem-limit", std::to_string(256 + kVmmMemOverheadMib)},
                  {"--nofile", std::to_string(kVmOpenFiles)},
                  {"--bind", "/s/tpl-1/i3"}});
  // After "--": the VMM's own command line without its argv[0] (the jail runs --exec-file).
  auto dash = std::find(argv.begin(), argv.end(), "--");
  ASSERT_NE(dash, argv.end());
  EXPECT_EQ(std::vector<std::string>(dash + 1, argv.end()),
            std::vector<std::string>(vmm.begin() + 1, vmm.end()));
  // Ids stay within the jail's alphabet and length.
  VmJail odd = vm_jail(spec, "/s", std::string(80, '_'), "i1", p, {}, 261235, false);
  EXPECT_LE(odd.id.size(), 64u);
  EXPECT_EQ(
      odd.id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-"),
      std::string::npos);
  const uid_t u1 = next_vm_uid(), u2 = next_vm_uid();
  EXPECT_NE(u1, u2);
  for (uid_t u : {u1, u2}) {
    EXPECT_GE(u, kVmUidBase);
    EXPECT_LT(u, kVmUidBase + kVmUidSpan);
  }
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
