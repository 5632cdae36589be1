// Whole files as strings, for tests that read what a guest or a program wrote (consoles, /proc
// entries, state files) and write the small inputs they hand it.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace carapace::testing {

// The file's bytes; "" when it cannot be opened.
inline std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Replaces the file's content with `data`.
inline void write_text_file(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
}

}  // namespace carapace::testing
