// Helpers for the virtio KVM tests: a temporary directory for images and sockets, `carapace run`
// argument lists for the test guest's virtio scenarios, and the blk image patterns the guest
// checks (guest/testguest/scenarios/blk.cpp).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/integration/testguest_harness.h"

namespace carapace::testing {

// mkdtemp under /tmp (short: socket paths must fit sockaddr_un); removed with its files.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/carapace-vt-XXXXXX";
    if (mkdtemp(tmpl)) path_ = tmpl;
  }
  ~TempDir() {
    if (path_.empty()) return;
    if (DIR* d = opendir(path_.c_str())) {
      while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") unlink((path_ + "/" + name).c_str());
      }
      closedir(d);
    }
    rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  bool ok() const { return !path_.empty(); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// `carapace run --kernel <testguest> --cmdline "testguest.run=<scenario> <words>" <flags...>`.
inline std::vector<std::string> virtio_argv(const std::string& scenario, const std::string& words,
                                            const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {
      carapace_binary(), "run",
      "--kernel",        testguest_image(),
      "--cmdline",       "testguest.run=" + scenario + (words.empty() ? "" : " " + words),
      "--timeout",       "50"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return argv;
}

inline ProcessResult run_virtio(const std::string& scenario, const std::string& words,
                                const std::vector<std::string>& flags,
                                std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  return run_process(virtio_argv(scenario, words, flags), limit);
}

// The scenario printed START and PASS, no FAIL, and the VMM exited with status 0.
inline ::testing::AssertionResult passed(const ProcessResult& r, const std::string& scenario) {
  if (!has_line(r.out, "TESTGUEST START " + scenario) ||
      !has_line(r.out, "TESTGUEST PASS " + scenario) ||
      r.out.find("TESTGUEST FAIL") != std::string::npos || r.exit_code != 0 || r.timed_out)
    return ::testing::AssertionFailure() << describe(r);
  return ::testing::AssertionSuccess();
}

// The patterns of the blk scenario: one 64-bit word per 8 bytes of the image.
inline uint64_t blk_image_word(uint64_t offset) {
  return 0xb10c000000000000ull | (offset >> 3);
}
inline uint64_t blk_written_word(uint64_t offset) {
  return 0xfeed000000000000ull | (offset >> 3);
}

inline bool write_pattern_image(const std::string& path, uint64_t bytes) {
  std::vector<uint64_t> words(bytes / 8);
  for (uint64_t i = 0; i < words.size(); ++i)
    words[i] = blk_image_word(i * 8);
  FILE* f = fopen(path.c_str(), "wb");
  if (!f) return false;
  bool ok = fwrite(words.data(), 8, words.size(), f) == words.size();
  return fclose(f) == 0 && ok;
}

inline std::vector<uint64_t> read_words(const std::string& path) {
  std::vector<uint64_t> words;
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) return words;
  uint64_t w;
  while (fread(&w, 8, 1, f) == 1)
    words.push_back(w);
  fclose(f);
  return words;
}

// First byte offset where the image differs from `expect(offset)`, or -1.
template <typename Expect>
int64_t first_mismatch(const std::vector<uint64_t>& words, Expect expect) {
  for (uint64_t i = 0; i < words.size(); ++i)
    if (words[i] != expect(i * 8)) return static_cast<int64_t>(i * 8);
  return -1;
}

}  // namespace carapace::testing
