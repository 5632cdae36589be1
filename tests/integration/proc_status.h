// Reading another process's /proc entries in tests: a field of its status file, one of its
// namespace links, its first child (a jail supervisor's VMM), and the checks that a jailed VMM is
// confined.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace carapace::testing {

// The value of `key:` in /proc/PID/status, leading blanks removed ("" when absent).
inline std::string proc_status_field(int pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) {
      const size_t start = line.find_first_not_of(" \t", key.size() + 1);
      return start == std::string::npos ? "" : line.substr(start);
    }
  return "";
}

// The target of /proc/PID/ns/NS ("mnt:[4026531841]"); `pid` may be "self".
inline std::string proc_ns_link(const std::string& pid, const char* ns) {
  char buf[64] = {};
  const std::string p = "/proc/" + pid + "/ns/" + ns;
  return ::readlink(p.c_str(), buf, sizeof buf - 1) > 0 ? buf : "";
}

// The first child of `parent` (from /proc/PID/task/PID/children), or -1.
inline int proc_first_child(int parent) {
  std::ifstream in("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) +
                   "/children");
  int pid = -1;
  return in >> pid ? pid : -1;
}

// The jailed process `pid` holds no capability, can gain no privilege, runs under a seccomp
// filter and shares none of these namespaces with this (host) process.
inline void expect_confined(int pid) {
  for (const char* caps : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
    EXPECT_EQ(proc_status_field(pid, caps), "0000000000000000") << caps;
  EXPECT_EQ(proc_status_field(pid, "NoNewPrivs"), "1");
  EXPECT_EQ(proc_status_field(pid, "Seccomp"), "2");
  for (const char* ns : {"mnt", "pid", "ipc", "uts", "net"})
    EXPECT_NE(proc_ns_link(std::to_string(pid), ns), proc_ns_link("self", ns))
        << ns << " namespace is the host's";
}

}  // namespace carapace::testing
