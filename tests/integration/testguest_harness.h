// Shared helpers for tests that boot the test guest with the real `carapace` binary over KVM.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/integration/process_runner.h"

namespace carapace::testing {

// Paths baked in by CMake.
inline std::string carapace_binary() {
  return CARAPACE_BINARY;
}
inline std::string testguest_image() {
  return CARAPACE_TESTGUEST;
}

// Fails the test (never skips) when /dev/kvm cannot be used: a KVM test that did not run is not
// a pass.
inline ::testing::AssertionResult kvm_usable() {
  if (access("/dev/kvm", R_OK | W_OK) != 0)
    return ::testing::AssertionFailure() << "/dev/kvm is not accessible: KVM tests need it";
  if (access(testguest_image().c_str(), R_OK) != 0)
    return ::testing::AssertionFailure() << "test guest not built: " << testguest_image();
  return ::testing::AssertionSuccess();
}

// `carapace run --kernel <testguest> --cmdline "testguest.run=<scenario>" <extra...>`.
inline ProcessResult run_scenario(const std::string& scenario,
                                  const std::vector<std::string>& extra = {},
                                  std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  std::vector<std::string> argv = {carapace_binary(), "run",       "--kernel",
                                   testguest_image(), "--cmdline", "testguest.run=" + scenario,
                                   "--timeout",       "50"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return run_process(argv, limit);
}

inline bool has_line(const std::string& text, const std::string& line) {
  size_t pos = 0;
  while ((pos = text.find(line, pos)) != std::string::npos) {
    bool start_ok = pos == 0 || text[pos - 1] == '\n';
    size_t end = pos + line.size();
    bool end_ok = end == text.size() || text[end] == '\n' || text[end] == '\r';
    if (start_ok && end_ok) return true;
    pos = end;
  }
  return false;
}

inline std::string describe(const ProcessResult& r) {
  return "exit=" + std::to_string(r.exit_code) + " signal=" + std::to_string(r.term_signal) +
         (r.timed_out ? " TIMED OUT" : "") + "\n--- stdout ---\n" + r.out + "\n--- stderr ---\n" +
         r.err;
}

}  // namespace carapace::testing
