// Real Linux drivers against our virtio devices ("Must show"): the guest kernel from
// tools/build-kernel, booted by `carapace run` WITHOUT an initramfs, with an ext4 root file system
// on our virtio-blk (`root=/dev/vda`), a virtio-net on the Unix datagram backend, virtio-vsock and
// virtio-rng.
//
// On a host that emulates guest CPL0 (PVM, ../shared/HOST-NOTES.md) the kernel gets as far as
// starting init and user space cannot run; there the test checks that Linux's virtio_blk probed
// the disk with the right capacity, ext4 mounted it, the kernel ran /sbin/init from it, and the
// VMM logged DRIVER_OK (with the negotiated features) for all four devices. On a host with
// hardware virtualization /sbin/init (the marker init) also runs: it prints its marker and
// reboots, and the run exits 0.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <string>

#include "common/base/unique_fd.h"
#include "tests/integration/process_runner.h"
#include "tests/integration/testguest_harness.h"
#include "tests/slow/slow_test_support.h"

namespace carapace::testing {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/cp-vroot-XXXXXX";  // short: Unix socket paths live in here
    if (::mkdtemp(tmpl) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// mke2fs lives in /usr/sbin, which a non-root PATH may lack.
std::string mke2fs_path() {
  for (const char* p : {"/usr/sbin/mke2fs", "/sbin/mke2fs"})
    if (access(p, X_OK) == 0) return p;
  return "mke2fs";
}

// A 16 MiB ext4 image holding /sbin/init (the marker init) and empty /dev, /proc, /sys, built
// without root privileges by mke2fs -d.
::testing::AssertionResult make_root_image(const std::string& dir, const std::string& image) {
  const std::string root = dir + "/root";
  std::error_code ec;
  for (const char* d : {"/sbin", "/dev", "/proc", "/sys"})
    fs::create_directories(root + d, ec);
  fs::copy_file(CARAPACE_MARKER_INIT, root + "/sbin/init", ec);
  if (ec) return ::testing::AssertionFailure() << "copy " CARAPACE_MARKER_INIT ": " << ec.message();
  ::chmod((root + "/sbin/init").c_str(), 0755);
  auto r = run_process({mke2fs_path(), "-q", "-t", "ext4", "-d", root, "-F", image, "16M"},
                       std::chrono::seconds(60));
  if (r.exit_code != 0)
    return ::testing::AssertionFailure() << "mke2fs (e2fsprogs) failed: " << describe(r);
  return ::testing::AssertionSuccess();
}

// The host end of the Unix datagram "wire" (--net unix=PATH): it must be bound before the VM
// starts. Frames the guest sends are left unread.
UniqueFd bind_datagram(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (!fd.valid() || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) < 0)
    return UniqueFd();
  return fd;
}

// Device names with a "virtio-mmio@0x...: <name> DRIVER_OK features 0x<hex>" line in the VMM log
// (vmm/virtio/mmio_transport.cpp), each with its negotiated features.
std::map<std::string, uint64_t> drivers_ok(const std::string& log) {
  static const std::regex line(
      R"(virtio-mmio@0x[0-9a-f]+: (\w+) DRIVER_OK features 0x([0-9a-f]+))");
  std::map<std::string, uint64_t> out;
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it)
    out[(*it)[1].str()] = std::stoull((*it)[2].str(), nullptr, 16);
  return out;
}

// Echoes the console lines that contain `needle`, so the log of a passing run shows the evidence.
void echo_lines(const std::string& text, const std::string& needle) {
  constexpr size_t npos = std::string::npos;
  for (size_t pos = text.find(needle); pos != npos; pos = text.find(needle, pos)) {
    const size_t newline = text.rfind('\n', pos);
    const size_t from = newline == npos ? 0 : newline + 1;
    const size_t end = text.find_first_of("\r\n", pos);
    std::cout << "[ console: " << text.substr(from, end == npos ? npos : end - from) << " ]"
              << std::endl;
    if (end == npos) break;
    pos = end;
  }
}

TEST(VirtioRootBootSlow, RealKernelDriversAgainstOurDevices) {
  const std::string vmlinux = CARAPACE_GUEST_DIR "/vmlinux";
  ASSERT_EQ(access("/dev/kvm", R_OK | W_OK), 0) << "/dev/kvm is needed";
  ASSERT_EQ(access(vmlinux.c_str(), R_OK), 0) << vmlinux << " missing: run tools/build-kernel";
  ASSERT_EQ(access(CARAPACE_MARKER_INIT, R_OK), 0) << CARAPACE_MARKER_INIT " missing";

  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty()) << "mkdtemp: " << std::strerror(errno);
  const std::string image = tmp.path() + "/root.ext4";
  ASSERT_TRUE(make_root_image(tmp.path(), image));
  const std::string wire = tmp.path() + "/net";
  UniqueFd peer = bind_datagram(wire);
  ASSERT_TRUE(peer.valid()) << "bind " << wire << ": " << std::strerror(errno);
  const std::string vsock_uds = tmp.path() + "/vsock";

  const bool hw = host_has_hardware_virtualization();
  ASSERT_TRUE(hw || !nested_harness()) << "CARAPACE_NESTED is set but this host has no vmx/svm";
  const std::string cmdline = slow_kernel_cmdline(hw, "root=/dev/vda rw rootfstype=ext4");
  std::vector<std::string> argv = {carapace_binary(), "run",   "--kernel",       vmlinux,
                                   "--cmdline",       cmdline, "--cpu-template", "baseline",
                                   "--mem",           "256",   "--timeout",      "330",
                                   "--log-level",     "info"};
  // The four devices, with Linux's own drivers on the other side.
  argv.insert(argv.end(),
              {"--drive", "path=" + image, "--net", "unix=" + wire + ",mac=02:ca:fe:00:00:01",
               "--vsock", "cid=3,uds=" + vsock_uds, "--rng"});
  auto r = run_process(argv, std::chrono::seconds(350));
  ASSERT_FALSE(r.timed_out) << describe(r);

  EXPECT_NE(r.out.find("Linux version 6.12"), std::string::npos) << describe(r);
  // Our command line, then the VMM's virtio_mmio.device= announcements.
  EXPECT_NE(r.out.find("Command line: " + cmdline + " virtio_mmio.device="), std::string::npos)
      << describe(r);
  // Linux's virtio_blk read our capacity: 16 MiB = 32768 sectors.
  EXPECT_NE(r.out.find("[vda] 32768 512-byte logical blocks"), std::string::npos) << describe(r);
  // ext4 read its superblock, group descriptors and journal through our device.
  EXPECT_NE(r.out.find("EXT4-fs (vda): mounted filesystem"), std::string::npos) << describe(r);
  EXPECT_NE(r.out.find("Run /sbin/init as init process"), std::string::npos) << describe(r);

  for (const char* needle : {"virtio_blk", "EXT4-fs (vda)", "Run /sbin/init"})
    echo_lines(r.out, needle);

  // Every device reached DRIVER_OK with VIRTIO_F_VERSION_1 negotiated.
  const auto ok = drivers_ok(r.err);
  for (const char* dev : {"block", "net", "vsock", "rng"}) {
    auto it = ok.find(dev);
    ASSERT_NE(it, ok.end()) << dev << " never reached DRIVER_OK\n" << describe(r);
    EXPECT_NE(it->second & (uint64_t{1} << 32), 0u) << dev << ": VERSION_1 not negotiated";
    std::cout << "[ " << dev << " DRIVER_OK features 0x" << std::hex << it->second << std::dec
              << " ]" << std::endl;
  }

  if (hw) {
    EXPECT_TRUE(has_line(r.out, "CARAPACE-INIT-MARKER ok")) << describe(r);
    EXPECT_EQ(r.exit_code, 0) << describe(r);
  } else {
    // Emulated CPL0: init cannot run; the run ends in a panic-reboot (0), the VMM's guest-panic
    // status (6) or the timeout (5).
    std::cout << "[ host without vmx/svm: checked the boot up to starting /sbin/init ]"
              << std::endl;
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 5 || r.exit_code == 6) << describe(r);
  }
}

}  // namespace
}  // namespace carapace::testing
