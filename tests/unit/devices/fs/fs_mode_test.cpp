// The share's modes, enforced on the host (docs/security.md #59): ro, rw and rw-nodelete against
// each kind of change, with the errno each must give, and the host files checked after.
#include <functional>

#include "tests/unit/devices/fs/fs_fixture.h"

namespace carapace::fstest {
namespace {

class FsModeTest : public FsTest, public ::testing::WithParamInterface<FsMode> {};

struct Row {
  const char* what;
  int ro, rw, nodelete;  // the errno per mode (0: allowed)
  std::function<int()> run;
  std::function<bool()> unchanged;  // the host state a refusal must leave (nullptr: none)
};

// docs/security.md #59.
TEST_P(FsModeTest, SecurityCheck59_ModeMatrix) {
  const FsMode mode = GetParam();
  ::mkdir(share().c_str(), 0755);
  for (const char* n : {"wr", "app", "past", "trunc", "shrink", "grow", "unl", "ren-src", "ren-dst",
                        "ren-new", "lnk", "chm", "xat", "punch", "rd"})
    put(n, "data");
  ::mkdir(path("emptydir").c_str(), 0755);
  start(mode);

  auto open_write = [&](const char* name, uint32_t flags, uint64_t off, const std::string& data) {
    const uint64_t n = node(name);
    uint64_t fh = 0;
    if (int e = open(n, flags, &fh); e != 0) return e;
    const int e = write(n, fh, off, data);
    release(n, fh);
    return e;
  };
  auto setattr = [&](const char* name, uint32_t valid, uint64_t size, uint32_t m) {
    fuse_setattr_in sa{};
    sa.valid = valid;
    sa.size = size;
    sa.mode = m;
    return call(FUSE_SETATTR, node(name), Args().add(sa)).err();
  };
  const std::vector<Row> rows = {
      {"create", EROFS, 0, 0,
       [&] {
         uint64_t n = 0, fh = 0;
         return create(1, "new", O_RDWR, 0644, &n, &fh);
       },
       [&] { return !exists("new"); }},
      {"mkdir", EROFS, 0, 0,
       [&] {
         fuse_mkdir_in in{};
         in.mode = 0755;
         return call(FUSE_MKDIR, 1, Args().add(in).str("newdir")).err();
       },
       [&] { return !exists("newdir"); }},
      {"overwrite", EROFS, 0, EPERM, [&] { return open_write("wr", O_WRONLY, 0, "XX"); },
       [&] { return get("wr") == "data"; }},
      {"append", EROFS, 0, 0, [&] { return open_write("app", O_WRONLY | O_APPEND, 4, "++"); },
       [&] { return get("app") == "data"; }},
      {"write past the end", EROFS, 0, 0, [&] { return open_write("past", O_WRONLY, 4, "++"); },
       [&] { return get("past") == "data"; }},
      {"open O_TRUNC", EROFS, 0, EPERM,
       [&] {
         uint64_t fh = 0;
         return open(node("trunc"), O_WRONLY | O_TRUNC, &fh);
       },
       [&] { return get("trunc") == "data"; }},
      {"truncate shorter", EROFS, 0, EPERM, [&] { return setattr("shrink", FATTR_SIZE, 1, 0); },
       [&] { return get("shrink") == "data"; }},
      {"truncate longer", EROFS, 0, 0, [&] { return setattr("grow", FATTR_SIZE, 100, 0); },
       [&] { return get("grow") == "data"; }},
      {"unlink", EROFS, 0, EPERM, [&] { return call(FUSE_UNLINK, 1, Args().str("unl")).err(); },
       [&] { return exists("unl"); }},
      {"rmdir", EROFS, 0, EPERM, [&] { return call(FUSE_RMDIR, 1, Args().str("emptydir")).err(); },
       [&] { return exists("emptydir"); }},
      {"rename over an existing name", EROFS, 0, EPERM,
       [&] { return rename(1, "ren-src", 1, "ren-dst"); },
       [&] { return get("ren-dst") == "data" && exists("ren-src"); }},
      {"rename to a new name", EROFS, 0, 0, [&] { return rename(1, "ren-new", 1, "ren-moved"); },
       [&] { return exists("ren-new") && !exists("ren-moved"); }},
      {"link", EROFS, 0, 0,
       [&] {
         fuse_link_in in{};
         in.oldnodeid = node("lnk");
         return call(FUSE_LINK, 1, Args().add(in).str("lnk2")).err();
       },
       [&] { return !exists("lnk2"); }},
      {"symlink", EROFS, 0, 0,
       [&] { return call(FUSE_SYMLINK, 1, Args().str("sym").str("target")).err(); },
       [&] { return !exists("sym"); }},
      {"chmod", EROFS, 0, 0, [&] { return setattr("chm", FATTR_MODE, 0, S_IFREG | 0600); },
       nullptr},
      {"setxattr", EROFS, EOPNOTSUPP, EOPNOTSUPP,
       [&] {
         fuse_setxattr_in in{};
         in.size = 1;
         return call(FUSE_SETXATTR, node("xat"), Args().add(in).str("user.x").str("v")).err();
       },
       nullptr},
      {"punch a hole", EROFS, 0, EPERM,
       [&] {
         const uint64_t n = node("punch");
         uint64_t fh = 0;
         if (int e = open(n, O_WRONLY, &fh); e != 0) return e;
         fuse_fallocate_in in{};
         in.fh = fh;
         in.length = 4;
         in.mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
         const int e = call(FUSE_FALLOCATE, n, Args().add(in)).err();
         release(n, fh);
         return e;
       },
       [&] { return get("punch") == "data"; }},
      {"read", 0, 0, 0,
       [&] {
         const uint64_t n = node("rd");
         uint64_t fh = 0;
         if (int e = open(n, O_RDONLY, &fh); e != 0) return e;
         int e = 0;
         EXPECT_EQ(read(n, fh, 0, 10, &e), "data");
         release(n, fh);
         return e;
       },
       nullptr},
  };
  for (const Row& row : rows) {
    const int want = mode == FsMode::kReadOnly    ? row.ro
                     : mode == FsMode::kReadWrite ? row.rw
                                                  : row.nodelete;
    EXPECT_EQ(row.run(), want) << row.what;
    if (want != 0 && row.unchanged) {
      EXPECT_TRUE(row.unchanged()) << row.what << ": host changed";
    }
  }
  if (mode == FsMode::kNoDelete) {
    // A file created in this session may be rewritten through its own handle.
    uint64_t n = 0, fh = 0;
    ASSERT_EQ(create(1, "fresh", O_RDWR, 0644, &n, &fh), 0);
    EXPECT_EQ(write(n, fh, 0, "abcd"), 0);
    EXPECT_EQ(write(n, fh, 0, "AB"), 0);
    EXPECT_EQ(get("fresh"), "ABcd");
    EXPECT_EQ(get("app"), "data++");
    // CREATE of an existing name is an OPEN of it: O_TRUNC of a non-empty file is a delete.
    EXPECT_EQ(create(1, "wr", O_RDWR | O_TRUNC, 0644, &n, &fh), EPERM);
    EXPECT_EQ(get("wr"), "data");
    EXPECT_EQ(create(1, "wr", O_RDWR | O_EXCL, 0644, &n, &fh), EEXIST);
    // Even a file made here is not unlinked: the rule is about names, not their age.
    EXPECT_EQ(call(FUSE_UNLINK, 1, Args().str("fresh")).err(), EPERM);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, FsModeTest,
                         ::testing::Values(FsMode::kReadOnly, FsMode::kReadWrite,
                                           FsMode::kNoDelete),
                         [](const auto& info) {
                           return info.param == FsMode::kReadOnly    ? std::string("ReadOnly")
                                  : info.param == FsMode::kReadWrite ? std::string("ReadWrite")
                                                                     : std::string("NoDelete");
                         });

}  // namespace
}  // namespace carapace::fstest
