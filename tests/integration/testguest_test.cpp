// The test guest booted by the real VMM over KVM: each scenario must print its PASS line and the
// VMM must exit with the status that matches how the guest ended.
#include <gtest/gtest.h>

#include "tests/integration/testguest_harness.h"

namespace carapace::testing {
namespace {

// Runs `scenario` and checks it passed cleanly; returns the run for further checks.
ProcessResult expect_pass(const std::string& scenario, const std::vector<std::string>& extra = {},
                          std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  EXPECT_TRUE(kvm_usable());
  auto r = run_scenario(scenario, extra, limit);
  EXPECT_TRUE(has_line(r.out, "TESTGUEST START " + scenario)) << describe(r);
  EXPECT_TRUE(has_line(r.out, "TESTGUEST PASS " + scenario)) << describe(r);
  EXPECT_EQ(r.out.find("TESTGUEST FAIL"), std::string::npos) << describe(r);
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(r.err, "") << describe(r);
  return r;
}

TEST(TestGuestKvm, BootInfoLinux64) {
  auto r = expect_pass("boot-info");
  EXPECT_NE(r.out.find("entry=linux64"), std::string::npos) << describe(r);
}

TEST(TestGuestKvm, BootInfoPvh) {
  ASSERT_TRUE(kvm_usable());
  auto r = run_scenario("boot-info", {"--boot", "pvh"});
  EXPECT_TRUE(has_line(r.out, "TESTGUEST PASS boot-info")) << describe(r);
  EXPECT_NE(r.out.find("entry=pvh"), std::string::npos) << describe(r);
  EXPECT_EQ(r.exit_code, 0) << describe(r);
}

TEST(TestGuestKvm, SerialPatternArrivesByteForByte) {
  ASSERT_TRUE(kvm_usable());
  auto r = run_scenario("serial");
  ASSERT_TRUE(has_line(r.out, "TESTGUEST PASS serial")) << describe(r);
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string expected;
  for (int i = 0; i < 64; ++i) {
    char num[8];
    snprintf(num, sizeof num, "%03d", i);
    expected += "testguest: serial line " + std::string(num) + " " + alphabet + "\n";
  }
  EXPECT_NE(r.out.find(expected), std::string::npos) << describe(r);
}

TEST(TestGuestKvm, MemoryDefault) {
  expect_pass("memory");
}

// 3200 MiB of RAM: 3 GiB below the MMIO hole and 128 MiB from 4 GiB; the guest checks both.
// Huge pages keep the first touch of 3 GiB affordable on hosts with slow page faults (15 s here
// alone, much longer when the host is busy).
TEST(TestGuestKvm, MemoryAcrossMmioHole) {
  auto r = expect_pass("memory", {"--mem", "3200", "--hugepages"}, std::chrono::seconds(240));
  EXPECT_NE(r.out.find("above 4 GiB"), std::string::npos) << describe(r);
}

TEST(TestGuestKvm, Timer) {
  expect_pass("timer");
}

TEST(TestGuestKvm, SmpOneVcpu) {
  expect_pass("smp");
}
TEST(TestGuestKvm, SmpTwoVcpus) {
  expect_pass("smp", {"--vcpus", "2"});
}
TEST(TestGuestKvm, SmpFourVcpus) {
  expect_pass("smp", {"--vcpus", "4"});
}

TEST(TestGuestKvm, BaselineTemplateBoots) {
  expect_pass("boot-info", {"--cpu-template", "baseline"});
}

TEST(TestGuestKvm, TripleFaultIsReportedNotHung) {
  ASSERT_TRUE(kvm_usable());
  auto r = run_scenario("fault", {}, std::chrono::seconds(30));
  EXPECT_FALSE(r.timed_out) << describe(r);
  EXPECT_TRUE(has_line(r.out, "TESTGUEST START fault")) << describe(r);
  EXPECT_EQ(r.out.find("TESTGUEST PASS"), std::string::npos) << describe(r);
  EXPECT_EQ(r.exit_code, 3) << describe(r);
  EXPECT_NE(r.err.find("triple fault"), std::string::npos) << describe(r);
  EXPECT_NE(r.err.find("rip="), std::string::npos) << "registers are printed: " << describe(r);
}

TEST(TestGuestKvm, UnknownScenarioFailsInGuest) {
  ASSERT_TRUE(kvm_usable());
  auto r = run_scenario("no-such-scenario");
  EXPECT_NE(r.out.find("TESTGUEST FAIL no-such-scenario: unknown scenario"), std::string::npos)
      << describe(r);
}

TEST(TestGuestKvm, ConsoleToFile) {
  ASSERT_TRUE(kvm_usable());
  char path[] = "/tmp/carapace-console-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  auto r = run_scenario("boot-info", {"--console", std::string("file:") + path});
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(r.out, "") << "console went to the file, not stdout";
  FILE* f = fopen(path, "r");
  ASSERT_NE(f, nullptr);
  std::string content;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    content.append(buf, n);
  fclose(f);
  unlink(path);
  EXPECT_TRUE(has_line(content, "TESTGUEST PASS boot-info")) << content;
}

}  // namespace
}  // namespace carapace::testing
