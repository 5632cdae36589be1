// `carapace` command-line behaviour: bad input is one clear line on stderr and exit status 2 with
// nothing started; timeouts and help/version behave as documented.
#include <elf.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "tests/integration/testguest_harness.h"
#include "tests/integration/tiny_elf.h"

namespace carapace::testing {
namespace {

// A minimal x86-64 ELF with one PT_LOAD segment of `code` at `paddr`.
std::string write_tiny_elf(const std::string& name, uint64_t paddr, const std::string& code) {
  return write_one_segment_elf<Elf64_Ehdr, Elf64_Phdr>(name, ELFCLASS64, EM_X86_64, paddr, code);
}

void expect_usage_error(const std::vector<std::string>& args, const std::string& needle) {
  std::vector<std::string> argv = {carapace_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_process(argv, std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_EQ(r.out, "") << "nothing may start: " << describe(r);
  // One line, starting with the program name, naming the problem.
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << describe(r);
  EXPECT_EQ(r.err.rfind("carapace: error: ", 0), 0u) << describe(r);
  EXPECT_NE(r.err.find(needle), std::string::npos)
      << "expected '" << needle << "' in " << describe(r);
}

TEST(CliTest, VersionAndHelp) {
  auto v = run_process({carapace_binary(), "version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out.rfind("carapace ", 0), 0u) << v.out;
  auto h = run_process({carapace_binary(), "--help"});
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("run"), std::string::npos);
  auto rh = run_process({carapace_binary(), "run", "--help"});
  EXPECT_EQ(rh.exit_code, 0);
  EXPECT_NE(rh.out.find("--cpu-template"), std::string::npos);
}

TEST(CliTest, BadFlagsAreUsageErrors) {
  expect_usage_error({"frobnicate"}, "unknown command");
  expect_usage_error({"run"}, "--kernel");
  expect_usage_error({"run", "--kernel", "x", "--bogus"}, "--bogus");
  expect_usage_error({"run", "--kernel", "x", "--mem", "8"}, "--mem");
  expect_usage_error({"run", "--kernel", "x", "--mem", "lots"}, "--mem");
  expect_usage_error({"run", "--kernel", "x", "--vcpus", "0"}, "--vcpus");
  expect_usage_error({"run", "--kernel", "x", "--cpu-template", "fast"}, "--cpu-template");
  expect_usage_error({"run", "--kernel", "x", "--boot", "bios"}, "--boot");
  expect_usage_error({"run", "--kernel", "x", "--console", "tty"}, "--console");
  expect_usage_error({"run", "--kernel", "x", "--timeout", "-1"}, "--timeout");
  expect_usage_error({"run", "--kernel"}, "missing value");
}

TEST(CliTest, BadKernelsAreUsageErrors) {
  ASSERT_TRUE(kvm_usable());
  expect_usage_error({"run", "--kernel", "/nonexistent/vmlinux"}, "cannot open");
  expect_usage_error({"run", "--kernel", "/etc/hostname"}, "ELF");
  expect_usage_error({"run", "--kernel", "/"}, "not a regular file");
  // A dynamically linked program is ET_DYN, not a kernel.
  expect_usage_error({"run", "--kernel", carapace_binary()}, "ET_EXEC");
  // A segment at 256 MiB does not fit a 16 MiB guest.
  auto far = write_tiny_elf("far.elf", 256ull << 20, "\xeb\xfe");
  expect_usage_error({"run", "--kernel", far, "--mem", "16"}, "outside guest RAM");
  // The test guest has a PVH note; this one does not.
  auto no_pvh = write_tiny_elf("nopvh.elf", 2ull << 20, "\xeb\xfe");
  expect_usage_error({"run", "--kernel", no_pvh, "--boot", "pvh"}, "PVH");
  expect_usage_error({"run", "--kernel", testguest_image(), "--initrd", "/nonexistent"}, "initrd");
}

TEST(CliTest, HostLimitsAreUsageErrors) {
  ASSERT_TRUE(kvm_usable());
  expect_usage_error({"run", "--kernel", testguest_image(), "--mem", "16000000"}, "host RAM");
  expect_usage_error({"run", "--kernel", testguest_image(), "--vcpus", "4000"}, "host limit");
}

TEST(CliTest, TimeoutHasItsOwnStatus) {
  ASSERT_TRUE(kvm_usable());
  // jmp $ forever at CPL0.
  auto spin = write_tiny_elf("spin.elf", 2ull << 20, "\xeb\xfe");
  auto r = run_process({carapace_binary(), "run", "--kernel", spin, "--timeout", "0.3"},
                       std::chrono::seconds(20));
  EXPECT_EQ(r.exit_code, 5) << describe(r);
  EXPECT_NE(r.err.find("timeout"), std::string::npos) << describe(r);
  EXPECT_LT(r.wall, std::chrono::seconds(5)) << "the VMM stops promptly";
}

// bench/startup reads these two debug lines: the first KVM_RUN's CLOCK_MONOTONIC time, and what
// the guest cost the vCPU. boot-info writes its report to the serial port, one exit per byte.
TEST(CliTest, DebugLogGivesTheFirstKvmRunAndTheTimeInsideIt) {
  ASSERT_TRUE(kvm_usable());
  auto r = run_process({carapace_binary(), "run", "--kernel", testguest_image(), "--cmdline",
                        "testguest.run=boot-info", "--log-level", "debug"},
                       std::chrono::seconds(20));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const std::string first_tag = "vCPU 0: first KVM_RUN at monotonic ";
  const size_t first = r.err.find(first_tag);
  ASSERT_NE(first, std::string::npos) << describe(r);
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const double at = strtod(r.err.c_str() + first + first_tag.size(), nullptr);
  EXPECT_GT(at, 0) << describe(r);
  EXPECT_LE(at, static_cast<double>(now.tv_sec) + 1) << "a time in this boot's CLOCK_MONOTONIC";
  unsigned long long returns = 0, io = 0, mmio = 0, hlt = 0;
  double inside_ms = -1;
  const size_t returns_at = r.err.find(" KVM_RUN returns (");
  ASSERT_NE(returns_at, std::string::npos) << describe(r);
  const size_t tally = r.err.rfind("vCPU 0: ", returns_at);
  ASSERT_NE(tally, std::string::npos) << describe(r);
  ASSERT_EQ(sscanf(r.err.c_str() + tally,
                   "vCPU 0: %llu KVM_RUN returns (io %llu, mmio %llu, hlt %llu), %lf ms inside "
                   "KVM_RUN",
                   &returns, &io, &mmio, &hlt, &inside_ms),
            5)
      << describe(r);
  EXPECT_GE(io, 50u) << "boot-info's report goes out byte by byte";
  EXPECT_GE(returns, io + mmio + hlt);
  EXPECT_GT(inside_ms, 0);
  const double wall_ms = std::chrono::duration<double, std::milli>(r.wall).count();
  EXPECT_LT(inside_ms, wall_ms);
}

}  // namespace
}  // namespace carapace::testing
