// What a process sandbox's workload can read of its processes' command lines and environments:
// a shell script that prints every readable /proc/PID/cmdline and /proc/PID/environ (NULs as
// spaces, one "PATH: text" line each), and a check that none of it names the host.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace carapace::testing {

// Files that cannot be opened (another uid's environ, a non-dumpable PID 1) are skipped: the
// workload cannot read them either.
inline constexpr char kProcScanScript[] =
    "for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do"
    "  if c=$(tr '\\000' ' ' < \"$f\" 2>/dev/null); then echo \"$f: $c\"; fi;"
    "done; echo scan-done";

// The scan ran to the end, PID 1 is the anonymous init, and no host string appears anywhere.
inline void expect_no_host_strings(const std::string& scan,
                                   const std::vector<std::string>& host_strings) {
  EXPECT_NE(scan.find("scan-done"), std::string::npos) << scan;
  EXPECT_NE(scan.find("/proc/1/cmdline: carapace-init \n"), std::string::npos)
      << "PID 1's command line is not the anonymous init's:\n"
      << scan;
  // The supervisor's flags, whatever their values.
  for (const char* flag : {"--isolation", "--rootfs", "--agent-sock", "--token-file",
                           "--chroot-base", "--uid", "--mem-limit", "--pids-max", "--agent "})
    EXPECT_EQ(scan.find(flag), std::string::npos) << flag << " visible in the sandbox:\n" << scan;
  for (const std::string& s : host_strings) {
    ASSERT_FALSE(s.empty());
    EXPECT_EQ(scan.find(s), std::string::npos) << "'" << s << "' visible in the sandbox:\n" << scan;
  }
}

}  // namespace carapace::testing
