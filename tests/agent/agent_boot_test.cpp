// The agent as PID 1 of a real guest kernel under QEMU TCG (label image): a minimal read-only
// ext4 root (busybox + the static agent) with the mount points guest/agent/README.md lists. A
// probe self-test checks the overlay root, /work, the hidden token file, the host name and that
// orphans are reaped; the agent prints its exit status and resets the machine.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "tests/agent/agent_harness.h"
#include "tests/integration/process_runner.h"
#include "tests/integration/qemu_microvm.h"

#include <gtest/gtest.h>

namespace carapace::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kProbe[] = R"sh(#!/bin/sh
echo "PWD=$(pwd) HOST=$(hostname)"
grep -q ' / overlay ' /proc/mounts && echo ROOT-IS-OVERLAY
touch /root-write && echo ROOT-WRITABLE
echo data > /work/out && echo WORK-WRITABLE
test -e /etc/carapace/token && echo TOKEN-VISIBLE || echo TOKEN-HIDDEN
(sleep 0.2 &)
sleep 1
echo "ZOMBIES=$(cat /proc/[0-9]*/stat | awk '{print $3}' | grep -c Z)"
exit 5
)sh";

TEST(AgentBootTest, BootsAsPid1RunsTheSelftestAndResets) {
  const std::string kernel = CARAPACE_KERNEL;
  for (const std::string& need :
       {kernel, std::string("/usr/bin/busybox"), std::string("/usr/bin/qemu-system-x86_64")})
    ASSERT_TRUE(fs::exists(need)) << need << " is missing (run tools/build-kernel and tools/setup)";

  char tmpl[] = "/tmp/carapace-agent-boot-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl, root = dir / "rootfs";
  for (const char* d : {"dev", "proc", "sys", "tmp", "run", "overlay", "work", "etc/carapace",
                        "usr/lib/carapace/selftest", "usr/sbin", "bin"})
    fs::create_directories(root / d);
  fs::copy_file(CARAPACE_AGENT_STATIC, root / "usr/sbin/carapace-agent");
  fs::copy_file("/usr/bin/busybox", root / "bin/busybox");
  for (const char* tool :
       {"sh", "cat", "grep", "awk", "touch", "test", "sleep", "hostname", "echo"})
    fs::create_symlink("busybox", root / "bin" / tool);
  write_text_file(root / "etc/carapace/token", "feedbeef\n");
  write_text_file(root / "usr/lib/carapace/selftest/probe", kProbe);
  fs::permissions(root / "usr/lib/carapace/selftest/probe", fs::perms(0755));
  const std::string image = dir / "root.ext4";
  auto mk = run_process({"/usr/sbin/mke2fs", "-q", "-t", "ext4", "-d", root, image, "64M"});
  ASSERT_EQ(mk.exit_code, 0) << mk.err;

  std::vector<std::string> qemu =
      qemu_microvm_argv("/usr/bin/qemu-system-x86_64", QemuAccel::kTcg, "256", "stdio");
  qemu.insert(qemu.end(),
              {"-no-reboot", "-kernel", kernel, "-append",
               "console=ttyS0 root=/dev/vda ro reboot=k panic=-1 init=/usr/sbin/carapace-agent "
               "carapace.selftest=probe",
               "-drive", "id=root,file=" + image + ",format=raw,if=none,readonly=on", "-device",
               "virtio-blk-device,drive=root"});
  auto r = run_process(qemu, std::chrono::seconds(240));
  fs::remove_all(dir);
  EXPECT_FALSE(r.timed_out) << r.out;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* line :
       {"carapace-agent: early boot", "carapace-agent: root file system ready",
        "carapace-agent: ready", "PWD=/work HOST=sandbox", "ROOT-IS-OVERLAY", "ROOT-WRITABLE",
        "WORK-WRITABLE", "TOKEN-HIDDEN", "ZOMBIES=0", "carapace-agent: selftest probe exit 5"})
    EXPECT_NE(r.out.find(line), std::string::npos) << "missing '" << line << "' in:\n" << r.out;
  EXPECT_EQ(r.out.find("no token configured"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Kernel panic"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace carapace::testing
