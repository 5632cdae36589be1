// `--fs tag=T[,path=DIR][,mode=ro|rw|rw-nodelete]` for `carapace run` and `carapace restore`:
// what parses, the defaults, and every refusal as one line naming the flag.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "vmm/cli/device_args.h"
#include "vmm/cli/restore_args.h"
#include "vmm/cli/run_args.h"

namespace carapace {
namespace {

using Args = std::vector<std::string>;

Result<RunArgs> run(Args extra) {
  Args a{"--kernel", "k"};
  a.insert(a.end(), extra.begin(), extra.end());
  return parse_run_args(a);
}

TEST(FsArgs, ParsesTagPathAndMode) {
  auto r = run({"--fs", "tag=work,path=/srv/work,mode=rw", "--fs", "tag=docs,path=/srv/docs",
                "--fs", "tag=later"});
  ASSERT_TRUE(r.ok()) << r.error().describe();
  const auto& fs = r->machine.devices.filesystems;
  ASSERT_EQ(fs.size(), 3u);
  EXPECT_EQ(fs[0].tag, "work");
  EXPECT_EQ(fs[0].shared_dir, "/srv/work");
  EXPECT_EQ(fs[0].mode, FsMode::kReadWrite);
  EXPECT_EQ(fs[1].mode, FsMode::kReadOnly);  // the default
  EXPECT_EQ(fs[2].shared_dir, "");           // unbound
  auto nodelete = parse_fs_arg("tag=t,path=rel/dir,mode=rw-nodelete");
  ASSERT_TRUE(nodelete.ok());
  EXPECT_EQ(nodelete->mode, FsMode::kNoDelete);
  EXPECT_EQ(nodelete->shared_dir, "rel/dir");
  EXPECT_TRUE(parse_fs_arg("tag=" + std::string(36, 'x')).ok());
}

TEST(FsArgs, RefusesBadValuesWithOneLine) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "empty value"},
      {"path=/d", "tag= is required"},
      {"tag=", "tag: empty"},
      {"tag=" + std::string(37, 'x'), "at most 36 bytes"},
      {"tag=a\tb", "control characters"},
      {"tag=t,path=", "empty path"},
      {"tag=t,path=/d,mode=rwx", "expected ro, rw or rw-nodelete"},
      {"tag=t,mode=rw", "mode= needs path="},
      {"tag=t,size=3", "unknown key 'size'"},
      {"tag=t,,path=/d", "expected key=value"},
      {"tag", "expected key=value"},
  };
  for (const auto& [spec, needle] : bad) {
    SCOPED_TRACE(spec);
    auto r = parse_fs_arg(spec);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
    EXPECT_NE(r.error().message.find("--fs"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
  }
  auto twice = run({"--fs", "tag=t,path=/a", "--fs", "tag=t,path=/b"});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("given twice"), std::string::npos);
  EXPECT_FALSE(run({"--fs"}).ok());
}

TEST(FsArgs, RestoreTakesTheSameFlagInOrder) {
  auto r = parse_restore_args({"--snapshot", "/s", "--fs", "tag=a", "--fs", "tag=b,path=/b"});
  ASSERT_TRUE(r.ok()) << r.error().describe();
  const auto& fs = r->machine.devices.filesystems;
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].tag, "a");
  EXPECT_EQ(fs[1].shared_dir, "/b");
  EXPECT_FALSE(parse_restore_args({"--snapshot", "/s", "--fs", "tag=a,mode=ro"}).ok());
}

// Clones of one restore share the flags: a writable folder would be written by all of them.
TEST(FsArgs, ClonesShareOnlyReadOnlyOrUnboundFolders) {
  auto ok = [](Args a) {
    Args all{"--snapshot", "/s", "--clones", "3"};
    all.insert(all.end(), a.begin(), a.end());
    return parse_restore_args(all).ok();
  };
  EXPECT_TRUE(ok({"--fs", "tag=a,path=/ro"}));
  EXPECT_TRUE(ok({"--fs", "tag=a"}));
  EXPECT_FALSE(ok({"--fs", "tag=a,path=/rw,mode=rw"}));
  EXPECT_FALSE(ok({"--fs", "tag=a,path=/rw,mode=rw-nodelete"}));
  EXPECT_TRUE(parse_restore_args({"--snapshot", "/s", "--fs", "tag=a,path=/rw,mode=rw"}).ok());
}

TEST(FsArgs, UsageNamesTheFlag) {
  EXPECT_NE(std::string(kRunUsage).find("--fs tag=T[,path=DIR][,mode=ro|rw|rw-nodelete]"),
            std::string::npos);
  EXPECT_NE(std::string(kRestoreUsage).find("--fs"), std::string::npos);
}

}  // namespace
}  // namespace carapace
