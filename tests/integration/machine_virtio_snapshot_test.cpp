// Virtio device state across an in-process snapshot over real KVM: the test guest's vsock scenario
// is paused while it waits for a host connection (its driver is up, rings live), the state and RAM
// are captured, and a clone restored from them (RAM mapped MAP_PRIVATE from a memfd, its own
// vsock socket) must accept a host connection and echo through the restored queues. An rng
// device the guest never drives travels too (a blob for an untouched transport). A clone whose
// devices do not match the snapshot is refused before it runs (docs/security.md #22).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/base/unique_fd.h"
#include "snapshot/memory_image.h"
#include "tests/integration/testguest_harness.h"
#include "tests/integration/text_file.h"
#include "tests/integration/unix_sockets.h"
#include "vmm/machine/machine.h"

namespace carapace::testing {
namespace {

MachineConfig vsock_config(const std::string& dir, const std::string& name, uint32_t cid = 3) {
  MachineConfig c;
  c.kernel_path = testguest_image();
  c.cmdline = "testguest.run=vsock testguest.vsock.port=1234";
  c.mem_bytes = 128ull << 20;
  c.console.kind = ConsoleKind::kFile;
  c.console.path = dir + name + ".console";
  c.timeout_seconds = 60;
  c.devices.vsock = VsockDeviceConfig{cid, dir + name + ".sock"};
  c.devices.rng = RngDeviceConfig{};
  return c;
}

// The paused VM's RAM as a sealed memfd (memory_image_in_memfd), mapped MAP_PRIVATE per clone.
GuestMemory map_private(const MemoryImage& image) {
  auto mem = map_guest_memory_private(image);
  EXPECT_TRUE(mem.ok()) << mem.error().describe();
  return std::move(mem).value();
}

bool wait_for_console(const std::string& path, const std::string& text, int seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (read_text_file(path).find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

struct Captured {
  MachineState state;
  MemoryImage ram;
};

// Boots the vsock scenario, pauses it once the guest listens, captures it and ends it.
void capture_listening_guest(const std::string& dir, Captured* out) {
  auto parent = Machine::build(vsock_config(dir, "parent"));
  ASSERT_TRUE(parent.ok()) << parent.error().describe();
  (*parent)->start();
  ASSERT_TRUE(wait_for_console(dir + "parent.console", "vsock listening on port 1234", 30))
      << read_text_file(dir + "parent.console");
  ASSERT_TRUE((*parent)->pause().ok());
  auto state = (*parent)->capture_state();
  ASSERT_TRUE(state.ok()) << state.error().describe();
  auto ram = memory_image_in_memfd((*parent)->memory(), "carapace-test-ram");
  EXPECT_TRUE(ram.ok()) << ram.error().describe();
  if (ram.ok()) out->ram = std::move(ram).value();
  out->state = std::move(state).value();
  (*parent)->resume();
  (*parent)->stop(VmOutcome::kHostError, "test: parent no longer needed");
  (void)(*parent)->wait();
}

TEST(MachineVirtioSnapshotKvm, RestoredVsockGuestAcceptsAndEchoes) {
  ASSERT_TRUE(kvm_usable());
  const std::string dir = ::testing::TempDir() + "virtio-snap-" + std::to_string(getpid()) + "-";
  Captured cap;
  ASSERT_NO_FATAL_FAILURE(capture_listening_guest(dir, &cap));
  ASSERT_EQ(cap.state.virtio.size(), 2u);  // vsock in slot 0, rng in slot 1
  EXPECT_EQ(cap.state.virtio[0].slot, 0u);
  EXPECT_EQ(cap.state.virtio[1].slot, 1u);

  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE("clone " + std::to_string(i));
    const std::string name = "clone" + std::to_string(i);
    // Each clone has its own CID and socket. The guest learns the CID from the
    // TRANSPORT_RESET the restored device sends (it re-reads the config, as Linux does); a
    // packet with the parent's CID would be refused as spoofed (docs/security.md #17).
    const uint32_t cid = 10 + static_cast<uint32_t>(i);
    auto clone = Machine::restore(vsock_config(dir, name, cid), cap.state, map_private(cap.ram));
    ASSERT_TRUE(clone.ok()) << clone.error().describe();
    (*clone)->start();
    // Let the guest take the TRANSPORT_RESET first: a driver that drops its connections on it
    // would otherwise drop one it accepted in the same poll.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    UniqueFd fd = unix_socket(SOCK_STREAM, dir + name + ".sock", SocketEnd::kConnect);
    ASSERT_TRUE(fd.valid()) << strerror(errno);
    ASSERT_EQ(write(fd.get(), "CONNECT 1234\n", 13), 13);
    const std::string ok = read_line(fd.get(), 20000);
    ASSERT_EQ(ok.rfind("OK ", 0), 0u) << ok << read_text_file(dir + name + ".console");
    const std::string data = "echo through restored queues, clone " + std::to_string(i) + "\n";
    ASSERT_EQ(write(fd.get(), data.data(), data.size()), static_cast<ssize_t>(data.size()));
    shutdown(fd.get(), SHUT_WR);
    EXPECT_EQ(read_some(fd.get(), data.size() + 1, 20000), data);
    fd.reset();
    EXPECT_EQ((*clone)->wait(), VmOutcome::kGuestReset) << (*clone)->outcome_detail();
    const std::string console = read_text_file(dir + name + ".console");
    EXPECT_NE(console.find("TESTGUEST PASS vsock"), std::string::npos) << console;
    // Restored, not booted: the clone never printed its start line.
    EXPECT_EQ(console.find("TESTGUEST START"), std::string::npos) << console;
  }
}

TEST(MachineVirtioSnapshotKvm, SecurityCheck22_CloneWithOtherDevicesIsRefusedBeforeItRuns) {
  ASSERT_TRUE(kvm_usable());
  const std::string dir = ::testing::TempDir() + "virtio-snap2-" + std::to_string(getpid()) + "-";
  Captured cap;
  ASSERT_NO_FATAL_FAILURE(capture_listening_guest(dir, &cap));

  MachineConfig no_rng = vsock_config(dir, "norng");  // one device fewer than the snapshot
  no_rng.devices.rng.reset();
  auto a = Machine::restore(no_rng, cap.state, map_private(cap.ram));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().kind, ErrorKind::kInvalidInput) << a.error().describe();

  // The device types swapped between slots (docs/security.md #22).
  MachineState swapped = cap.state;
  std::swap(swapped.virtio[0].bytes, swapped.virtio[1].bytes);
  auto b = Machine::restore(vsock_config(dir, "swapped"), swapped, map_private(cap.ram));
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("device"), std::string::npos) << b.error().describe();

  // A ready queue moved outside guest RAM.
  MachineState outside = cap.state;
  auto& bytes = outside.virtio[0].bytes;
  ASSERT_GT(bytes.size(), 54u);
  const uint64_t far = 64ull << 30;  // descriptor table of queue 0 at 64 GiB
  std::memcpy(bytes.data() + 46, &far, 8);
  auto c = Machine::restore(vsock_config(dir, "outside"), outside, map_private(cap.ram));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("outside guest RAM"), std::string::npos) << c.error().describe();
}

}  // namespace
}  // namespace carapace::testing
