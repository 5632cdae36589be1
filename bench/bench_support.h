// What the bench programs share: where the built programs lie next to them, the value of a
// command-line flag, a median and the milliseconds since a point in time.
#pragma once

#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace carapace::bench {

using Clock = std::chrono::steady_clock;

// `rel` under the build folder: the benches live in build/bench/, the VMM and guests in build/.
inline std::string build_path(const char* argv0, const char* rel) {
  std::string self(argv0);
  auto slash = self.rfind('/');
  std::string dir = slash == std::string::npos ? "." : self.substr(0, slash);
  return dir + "/../" + rel;
}

// The value of the flag at argv[*i], advancing *i past it; a flag without one ends the bench with
// a line on stderr and status 2.
inline std::string flag_value(const char* bench, int argc, char** argv, int* i) {
  if (*i + 1 >= argc) {
    fprintf(stderr, "%s: %s needs a value\n", bench, argv[*i]);
    exit(2);
  }
  return argv[++*i];
}

// `p` made absolute (for programs that change folder or hand paths to a jail); `p` itself when
// it does not exist.
inline std::string absolute(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace carapace::bench
