// The host side of the test guest's fs scenario (guest/testguest/scenarios/fs.cpp): a share with
// hello.txt, victim.txt and two planted symlinks out of it (`escape` to a file, `escape-dir` to
// a folder beside the share), and what the guest's lines and the host folder must show
// afterwards for each mode.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/integration/testguest_harness.h"
#include "tests/integration/text_file.h"

namespace carapace::testing {

inline constexpr char kHello[] = "hello from the host";
inline constexpr char kWrittenByGuest[] = "written by the guest\n";

class FsShare {
 public:
  FsShare() {
    char tmpl[] = "/tmp/carapace-fs-XXXXXX";
    if (!mkdtemp(tmpl)) return;
    root_ = tmpl;
    namespace fs = std::filesystem;
    fs::create_directory(share());
    fs::create_directory(outside());
    write_text_file(share() + "/hello.txt", kHello);
    write_text_file(share() + "/victim.txt", "victim");
    write_text_file(outside() + "/secret.txt", "secret");
    write_text_file(outside() + "/passwd", "root:x:0:0");
    fs::create_symlink(outside() + "/secret.txt", share() + "/escape");
    fs::create_directory_symlink(outside(), share() + "/escape-dir");
  }
  ~FsShare() {
    std::error_code ec;
    if (!root_.empty()) std::filesystem::remove_all(root_, ec);
  }
  FsShare(const FsShare&) = delete;
  FsShare& operator=(const FsShare&) = delete;

  bool ok() const { return !root_.empty(); }
  std::string root() const { return root_; }
  std::string share() const { return root_ + "/share"; }
  std::string outside() const { return root_ + "/outside"; }
  std::string file(const std::string& name) const { return share() + "/" + name; }
  bool exists(const std::string& name) const {
    struct stat st {};
    return lstat(file(name).c_str(), &st) == 0;
  }
  // --fs tag=work,path=<share>,mode=<mode>
  std::string flag(const std::string& mode) const {
    return "tag=work,path=" + share() + ",mode=" + mode;
  }

 private:
  std::string root_;
};

// The lines every run of the scenario prints, whatever the mode: the read and the refused
// escapes (docs/security.md #56).
inline ::testing::AssertionResult read_and_escapes_refused(const std::string& out) {
  for (const std::string& line : {
           std::string("testguest: fs tag work minor 31 max_write 1048576"),
           "testguest: fs read hello.txt 19 bytes: " + std::string(kHello),
           std::string("testguest: fs lookup .. errno 22"),                 // EINVAL: not a name
           std::string("testguest: fs open escape errno 40"),               // ELOOP: never followed
           std::string("testguest: fs lookup escape-dir/passwd errno 20"),  // ENOTDIR
       })
    if (!has_line(out, line)) return ::testing::AssertionFailure() << "no line: " << line;
  return ::testing::AssertionSuccess();
}

// The outside folder is as the test made it.
inline ::testing::AssertionResult outside_untouched(const FsShare& s) {
  if (read_text_file(s.outside() + "/secret.txt") != "secret" ||
      read_text_file(s.outside() + "/passwd") != "root:x:0:0")
    return ::testing::AssertionFailure() << "a file outside the share changed";
  std::error_code ec;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator(s.outside(), ec);
       !ec && it != std::filesystem::directory_iterator(); ++it)
    ++n;
  if (n != 2) return ::testing::AssertionFailure() << n << " files outside the share, not 2";
  return ::testing::AssertionSuccess();
}

}  // namespace carapace::testing
