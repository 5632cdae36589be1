// Helpers for in-process tests of the test guest's `counter` scenario: its configuration, console
// reading, and the final value a run prints.
#pragma once

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "tests/integration/testguest_harness.h"
#include "tests/integration/text_file.h"
#include "vmm/machine/machine_config.h"

namespace carapace::testing {

// The value after "counter final", or "" when the run did not get there.
inline std::string counter_final_value(const std::string& console) {
  std::smatch m;
  static const std::regex re("counter final (0x[0-9a-f]+)");
  return std::regex_search(console, m, re) ? m[1].str() : "";
}

inline MachineConfig counter_config(const std::string& console_path, int rounds = 30) {
  MachineConfig c;
  c.kernel_path = testguest_image();
  c.cmdline = "testguest.run=counter testguest.mib=32 testguest.rounds=" + std::to_string(rounds);
  c.mem_bytes = 128ull << 20;
  c.console.kind = ConsoleKind::kFile;
  c.console.path = console_path;
  c.timeout_seconds = 60;
  return c;
}

// Waits until the console file at `path` contains `text`; false after `limit`.
inline bool wait_for_console(const std::string& path, const std::string& text,
                             std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (read_text_file(path).find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace carapace::testing
