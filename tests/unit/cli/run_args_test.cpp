// `carapace run` flag parsing: every flag, and every refusal is kInvalidInput naming the flag.
#include "vmm/cli/run_args.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace carapace {
namespace {

using Args = std::vector<std::string>;

Args with_kernel(Args extra) {
  Args a{"--kernel", "/boot/vmlinux"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// The parse fails as bad input and the message mentions `needle` (usually the flag).
void expect_bad(const Args& args, const std::string& needle) {
  std::string joined;
  for (const auto& a : args)
    joined += a + " ";
  SCOPED_TRACE(joined);
  auto r = parse_run_args(args);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
}

TEST(RunArgsTest, DefaultsWithOnlyKernel) {
  auto r = parse_run_args(with_kernel({}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const MachineConfig& m = r->machine;
  EXPECT_EQ(m.kernel_path, "/boot/vmlinux");
  EXPECT_EQ(m.initrd_path, "");
  EXPECT_EQ(m.cmdline, "");
  EXPECT_EQ(m.mem_bytes, 128ull << 20);
  EXPECT_FALSE(m.hugepages);
  EXPECT_EQ(m.vcpus, 1u);
  EXPECT_EQ(m.cpu_template, CpuTemplate::kHost);
  EXPECT_EQ(m.boot, BootProtocol::kLinux64);
  EXPECT_EQ(m.console.kind, ConsoleKind::kStdio);
  EXPECT_FALSE(m.console.input);
  EXPECT_FALSE(m.timeout_seconds.has_value());
  EXPECT_EQ(r->log_level, 1);
  EXPECT_TRUE(r->deferred_teardown);
}

TEST(RunArgsTest, EveryFlagParses) {
  // One flag and its value per line.
  // clang-format off
  const Args args = {
      "--kernel", "k",
      "--initrd", "/i.cpio",
      "--cmdline", "console=ttyS0 quiet",
      "--mem", "512",
      "--hugepages",
      "--vcpus", "4",
      "--cpu-template", "baseline",
      "--boot", "pvh",
      "--console", "file:/tmp/out.log",
      "--console-input",
      "--timeout", "2.5",
      "--teardown", "sync",
      "--log-level", "debug",
  };
  // clang-format on
  auto r = parse_run_args(args);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const MachineConfig& m = r->machine;
  EXPECT_EQ(m.kernel_path, "k");
  EXPECT_EQ(m.initrd_path, "/i.cpio");
  EXPECT_EQ(m.cmdline, "console=ttyS0 quiet");
  EXPECT_EQ(m.mem_bytes, 512ull << 20);
  EXPECT_TRUE(m.hugepages);
  EXPECT_EQ(m.vcpus, 4u);
  EXPECT_EQ(m.cpu_template, CpuTemplate::kBaseline);
  EXPECT_EQ(m.boot, BootProtocol::kPvh);
  EXPECT_EQ(m.console.kind, ConsoleKind::kFile);
  EXPECT_EQ(m.console.path, "/tmp/out.log");
  EXPECT_TRUE(m.console.input);
  ASSERT_TRUE(m.timeout_seconds.has_value());
  EXPECT_DOUBLE_EQ(*m.timeout_seconds, 2.5);
  EXPECT_EQ(r->log_level, 3);
  EXPECT_FALSE(r->deferred_teardown);
}

TEST(RunArgsTest, EnumValuesParse) {
  EXPECT_EQ(parse_run_args(with_kernel({"--boot", "elf"}))->machine.boot, BootProtocol::kLinux64);
  EXPECT_EQ(parse_run_args(with_kernel({"--console", "none"}))->machine.console.kind,
            ConsoleKind::kNone);
  EXPECT_EQ(parse_run_args(with_kernel({"--console", "stdio"}))->machine.console.kind,
            ConsoleKind::kStdio);
  EXPECT_EQ(parse_run_args(with_kernel({"--cpu-template", "host"}))->machine.cpu_template,
            CpuTemplate::kHost);
  const char* levels[] = {"error", "warn", "info", "debug"};
  for (int l = 0; l < 4; ++l)
    EXPECT_EQ(parse_run_args(with_kernel({"--log-level", levels[l]}))->log_level, l);
  EXPECT_EQ(parse_run_args(with_kernel({"--mem", "16"}))->machine.mem_bytes, 16ull << 20);
  EXPECT_TRUE(parse_run_args(with_kernel({"--teardown", "deferred"}))->deferred_teardown);
}

// docs/security.md #29: a file console can be capped in bytes; a bad cap is one line.
TEST(RunArgsTest, ConsoleFileTakesAByteCap) {
  auto r = parse_run_args(with_kernel({"--console", "file:/tmp/a,b.log,max=4096"}));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->machine.console.kind, ConsoleKind::kFile);
  EXPECT_EQ(r->machine.console.path, "/tmp/a,b.log");
  EXPECT_EQ(r->machine.console.max_bytes, 4096u);
  EXPECT_EQ(parse_run_args(with_kernel({"--console", "file:/tmp/x"}))->machine.console.max_bytes,
            0u);
  expect_bad({"--kernel", "k", "--console", "file:/tmp/x,max=0"}, "max");
  expect_bad({"--kernel", "k", "--console", "file:/tmp/x,max=lots"}, "max");
  expect_bad({"--kernel", "k", "--console", "file:,max=10"}, "empty path");
}

TEST(RunArgsTest, KernelIsRequired) {
  expect_bad({}, "--kernel");
  expect_bad({"--mem", "64"}, "--kernel");
  expect_bad({"--kernel", ""}, "--kernel");
}

TEST(RunArgsTest, UnknownFlagAndMissingValue) {
  expect_bad(with_kernel({"--frobnicate"}), "--frobnicate");
  expect_bad(with_kernel({"--mem=64"}), "--mem=64");
  expect_bad(with_kernel({"vmlinux"}), "vmlinux");
  expect_bad({"--kernel"}, "--kernel: missing value");
  for (const char* flag : {"--initrd", "--cmdline", "--mem", "--vcpus", "--cpu-template", "--boot",
                           "--console", "--timeout", "--teardown", "--log-level"})
    expect_bad(with_kernel({flag}), std::string(flag) + ": missing value");
}

TEST(RunArgsTest, BadMemory) {
  for (const char* v : {"8", "15", "0", "abc", "-5", "+64", "64M", " 64", "1e3", "",
                        "99999999999999999999", "16777217"})
    expect_bad(with_kernel({"--mem", v}), "--mem");
}

TEST(RunArgsTest, BadVcpus) {
  for (const char* v : {"0", "-1", "two", "4097", "18446744073709551616"})
    expect_bad(with_kernel({"--vcpus", v}), "--vcpus");
}

TEST(RunArgsTest, BadEnums) {
  expect_bad(with_kernel({"--cpu-template", "foo"}), "--cpu-template");
  expect_bad(with_kernel({"--boot", "xyz"}), "--boot");
  expect_bad(with_kernel({"--console", "bogus"}), "--console");
  expect_bad(with_kernel({"--console", "file:"}), "--console");
  expect_bad(with_kernel({"--console", "FILE:/x"}), "--console");
  expect_bad(with_kernel({"--log-level", "trace"}), "--log-level");
  expect_bad(with_kernel({"--initrd", ""}), "--initrd");
  expect_bad(with_kernel({"--teardown", "later"}), "--teardown");
}

TEST(RunArgsTest, BadTimeout) {
  for (const char* v : {"0", "-1", "nan", "NaN", "inf", "abc", "", "5s", "1e400", "1e8"})
    expect_bad(with_kernel({"--timeout", v}), "--timeout");
  auto small = parse_run_args(with_kernel({"--timeout", "0.001"}));
  ASSERT_TRUE(small.ok());
  EXPECT_DOUBLE_EQ(*small->machine.timeout_seconds, 0.001);
}

TEST(RunArgsTest, ConsoleInputNeedsAConsole) {
  expect_bad(with_kernel({"--console", "none", "--console-input"}), "--console-input");
  expect_bad(with_kernel({"--console-input", "--console", "none"}), "--console-input");
  EXPECT_TRUE(parse_run_args(with_kernel({"--console", "file:/x", "--console-input"})).ok());
}

TEST(RunArgsTest, LaterFlagWins) {
  auto r = parse_run_args(with_kernel({"--mem", "64", "--mem", "256", "--kernel", "other"}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->machine.mem_bytes, 256ull << 20);
  EXPECT_EQ(r->machine.kernel_path, "other");
}

TEST(RunArgsTest, NumberHelpers) {
  EXPECT_EQ(*parse_u64("--x", "18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(*parse_u64("--x", "007"), 7u);
  auto over = parse_u64("--x", "18446744073709551616");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(over.error().message.find("--x"), std::string::npos);
  EXPECT_DOUBLE_EQ(*parse_seconds("--t", "10"), 10.0);
  EXPECT_FALSE(parse_seconds("--t", "-0").ok());
}

}  // namespace
}  // namespace carapace
