// The virtio-fs file server's ops on their happy paths, over a temporary share.
#include <sys/stat.h>
#include <sys/xattr.h>

#include <algorithm>

#include "tests/unit/devices/fs/fs_fixture.h"

namespace carapace::fstest {
namespace {

// Walks READDIR(PLUS) records; returns the names.
std::vector<std::string> names(const Reply& r, bool plus,
                               std::vector<uint64_t>* nodeids = nullptr) {
  std::vector<std::string> out;
  size_t pos = 0;
  const size_t base = plus ? FUSE_NAME_OFFSET_DIRENTPLUS : FUSE_NAME_OFFSET;
  while (pos + base <= r.payload.size()) {
    fuse_dirent d{};
    std::memcpy(&d, r.payload.data() + pos + (plus ? sizeof(fuse_entry_out) : 0), sizeof d);
    if (plus && nodeids != nullptr) {
      fuse_entry_out e{};
      std::memcpy(&e, r.payload.data() + pos, sizeof e);
      nodeids->push_back(e.nodeid);
    }
    out.emplace_back(reinterpret_cast<const char*>(r.payload.data() + pos + base), d.namelen);
    pos += FUSE_DIRENT_ALIGN(base + d.namelen);
  }
  EXPECT_EQ(pos, r.payload.size());
  return out;
}

TEST_F(FsTest, InitNegotiatesAndCapsWrites) {
  start(FsMode::kReadWrite, 64, 16, false);
  fuse_init_in in{};
  in.major = 7;
  in.minor = 38;
  in.max_readahead = 64u << 20;
  in.flags = FUSE_DO_READDIRPLUS | FUSE_POSIX_LOCKS | FUSE_BIG_WRITES;
  // 7.36+ kernels send the 64-byte fuse_init_in; 7.31 ones 16 bytes. Both are served.
  Reply r = call(FUSE_INIT, 0, Args().add(in));
  ASSERT_EQ(r.err(), 0);
  auto out = r.as<fuse_init_out>();
  EXPECT_EQ(out.major, 7u);
  EXPECT_EQ(out.minor, fs::FileServer::kMinor);
  EXPECT_EQ(out.max_write, 1u << 20);
  EXPECT_EQ(out.max_readahead, 1u << 20);
  EXPECT_EQ(out.flags & FUSE_POSIX_LOCKS, 0u);  // never offered
  EXPECT_NE(out.flags & FUSE_DO_READDIRPLUS, 0u);
  EXPECT_TRUE(server_->initialized());
  Args small;
  small.b.assign(reinterpret_cast<uint8_t*>(&in), reinterpret_cast<uint8_t*>(&in) + 16);
  EXPECT_EQ(call(FUSE_INIT, 0, small).err(), 0);
}

TEST_F(FsTest, FileLifecycle) {
  start();
  uint64_t ino = 0, fh = 0;
  ASSERT_EQ(create(FUSE_ROOT_ID, "a.txt", O_RDWR, 0644, &ino, &fh), 0);
  EXPECT_EQ(write(ino, fh, 0, "hello world"), 0);
  EXPECT_EQ(read(ino, fh, 6, 100), "world");
  EXPECT_EQ(get("a.txt"), "hello world");

  fuse_getattr_in ga{};
  Reply attr = call(FUSE_GETATTR, ino, Args().add(ga));
  ASSERT_EQ(attr.err(), 0);
  EXPECT_EQ(attr.as<fuse_attr_out>().attr.size, 11u);
  EXPECT_TRUE(S_ISREG(attr.as<fuse_attr_out>().attr.mode));

  fuse_setattr_in sa{};
  sa.valid = FATTR_SIZE | FATTR_MODE | FATTR_MTIME;
  sa.size = 5;
  sa.mode = 0600;
  sa.mtime = 1000000;
  Reply set = call(FUSE_SETATTR, ino, Args().add(sa));
  ASSERT_EQ(set.err(), 0);
  EXPECT_EQ(set.as<fuse_attr_out>().attr.size, 5u);
  EXPECT_EQ(set.as<fuse_attr_out>().attr.mode & 07777, 0600u);
  EXPECT_EQ(set.as<fuse_attr_out>().attr.mtime, 1000000u);
  EXPECT_EQ(get("a.txt"), "hello");

  fuse_lseek_in ls{};
  ls.fh = fh;
  ls.whence = SEEK_END;
  Reply seek = call(FUSE_LSEEK, ino, Args().add(ls));
  ASSERT_EQ(seek.err(), 0);
  EXPECT_EQ(seek.as<fuse_lseek_out>().offset, 5u);

  fuse_fsync_in fs{};
  fs.fh = fh;
  EXPECT_EQ(call(FUSE_FSYNC, ino, Args().add(fs)).err(), 0);
  fuse_flush_in fl{};
  fl.fh = fh;
  EXPECT_EQ(call(FUSE_FLUSH, ino, Args().add(fl)).err(), 0);
  fuse_fallocate_in fa{};
  fa.fh = fh;
  fa.length = 4096;
  EXPECT_EQ(call(FUSE_FALLOCATE, ino, Args().add(fa)).err(), 0);
  struct stat hs {};
  ASSERT_EQ(::stat(path("a.txt").c_str(), &hs), 0);
  EXPECT_EQ(hs.st_size, 4096);

  uint64_t ino2 = 0, fh2 = 0;
  ASSERT_EQ(create(FUSE_ROOT_ID, "b.txt", O_RDWR, 0644, &ino2, &fh2), 0);
  fuse_copy_file_range_in cr{};
  cr.fh_in = fh;
  cr.nodeid_out = ino2;
  cr.fh_out = fh2;
  cr.len = 5;
  Reply copy = call(FUSE_COPY_FILE_RANGE, ino, Args().add(cr));
  ASSERT_EQ(copy.err(), 0);
  EXPECT_EQ(copy.as<fuse_write_out>().size, 5u);
  EXPECT_EQ(get("b.txt"), "hello");

  EXPECT_EQ(release(ino, fh), 0);
  EXPECT_EQ(release(ino2, fh2), 0);
  EXPECT_EQ(server_->handle_count(), 0u);
  EXPECT_EQ(release(ino, fh), EBADF);  // once only

  // OPEN of an existing file, read-only.
  ASSERT_EQ(open(ino, O_RDONLY, &fh), 0);
  EXPECT_EQ(read(ino, fh, 0, 3), "hel");
  EXPECT_EQ(release(ino, fh), 0);
}

TEST_F(FsTest, DirectoriesNamesAndLinks) {
  start();
  uint64_t d = 0;
  ASSERT_EQ(mkdir(FUSE_ROOT_ID, "dir", &d), 0);
  EXPECT_TRUE(exists("dir"));
  uint64_t f = 0, fh = 0;
  ASSERT_EQ(create(d, "f", O_WRONLY, 0644, &f, &fh), 0);
  ASSERT_EQ(release(f, fh), 0);

  fuse_mknod_in mk{};
  mk.mode = S_IFREG | 0644;
  ASSERT_EQ(call(FUSE_MKNOD, d, Args().add(mk).str("g")).err(), 0);
  EXPECT_TRUE(exists("dir/g"));

  Reply sym = call(FUSE_SYMLINK, d, Args().str("s").str("../elsewhere"));
  ASSERT_EQ(sym.err(), 0);
  const uint64_t s = sym.as<fuse_entry_out>().nodeid;
  Reply rl = call(FUSE_READLINK, s, Args());
  ASSERT_EQ(rl.err(), 0);
  EXPECT_EQ(std::string(rl.payload.begin(), rl.payload.end()), "../elsewhere");

  fuse_link_in ln{};
  ln.oldnodeid = f;
  Reply link = call(FUSE_LINK, FUSE_ROOT_ID, Args().add(ln).str("hard"));
  ASSERT_EQ(link.err(), 0);
  EXPECT_EQ(link.as<fuse_entry_out>().nodeid, f);  // one host inode, one node id
  EXPECT_EQ(link.as<fuse_entry_out>().attr.nlink, 2u);

  uint64_t dh = 0;
  ASSERT_EQ(open(d, O_RDONLY, &dh, true), 0);
  fuse_read_in rd{};
  rd.fh = dh;
  rd.size = 4096;
  Reply list = call(FUSE_READDIR, d, Args().add(rd));
  ASSERT_EQ(list.err(), 0);
  auto n = names(list, false);
  std::sort(n.begin(), n.end());
  EXPECT_EQ(n, (std::vector<std::string>{".", "..", "f", "g", "s"}));
  std::vector<uint64_t> ids;
  Reply plus = call(FUSE_READDIRPLUS, d, Args().add(rd));
  ASSERT_EQ(plus.err(), 0);
  auto pn = names(plus, true, &ids);
  ASSERT_EQ(pn.size(), 5u);
  for (size_t i = 0; i < pn.size(); ++i)
    if (pn[i] == "f") {
      EXPECT_EQ(ids[i], f);
    }
  // A small buffer: one record at a time, resumed at its offset.
  rd.size = 40;
  Reply one = call(FUSE_READDIR, d, Args().add(rd));
  ASSERT_EQ(names(one, false).size(), 1u);
  fuse_dirent first{};
  std::memcpy(&first, one.payload.data(), sizeof first);
  rd.offset = first.off;
  Reply two = call(FUSE_READDIR, d, Args().add(rd));
  ASSERT_EQ(names(two, false).size(), 1u);
  EXPECT_NE(names(two, false)[0], names(one, false)[0]);
  fuse_fsync_in fs{};
  fs.fh = dh;
  EXPECT_EQ(call(FUSE_FSYNCDIR, d, Args().add(fs)).err(), 0);
  EXPECT_EQ(release(d, dh, true), 0);

  EXPECT_EQ(rename(d, "g", FUSE_ROOT_ID, "g2"), 0);
  EXPECT_TRUE(exists("g2"));
  EXPECT_EQ(rename(FUSE_ROOT_ID, "g2", d, "f", RENAME_NOREPLACE), EEXIST);
  EXPECT_EQ(rename(FUSE_ROOT_ID, "g2", d, "f", RENAME_EXCHANGE), EINVAL);
  EXPECT_EQ(rename(FUSE_ROOT_ID, "g2", d, "f", RENAME_WHITEOUT), EINVAL);
  fuse_rename_in r1{};
  r1.newdir = d;
  EXPECT_EQ(call(FUSE_RENAME, FUSE_ROOT_ID, Args().add(r1).str("g2").str("f")).err(), 0);
  EXPECT_FALSE(exists("g2"));

  EXPECT_EQ(call(FUSE_UNLINK, FUSE_ROOT_ID, Args().str("hard")).err(), 0);
  EXPECT_EQ(call(FUSE_RMDIR, FUSE_ROOT_ID, Args().str("dir")).err(), ENOTEMPTY);
  EXPECT_EQ(call(FUSE_UNLINK, d, Args().str("f")).err(), 0);
  EXPECT_EQ(call(FUSE_UNLINK, d, Args().str("s")).err(), 0);
  EXPECT_EQ(call(FUSE_RMDIR, FUSE_ROOT_ID, Args().str("dir")).err(), 0);
  EXPECT_FALSE(exists("dir"));
}

TEST_F(FsTest, StatfsXattrsUnknownOpsAndDestroy) {
  start();
  Reply st = call(FUSE_STATFS, FUSE_ROOT_ID, Args());
  ASSERT_EQ(st.err(), 0);
  EXPECT_GT(st.as<fuse_statfs_out>().st.bsize, 0u);
  put("x", "1");
  const uint64_t x = node("x");
  fuse_getxattr_in gx{};
  gx.size = 64;
  EXPECT_EQ(call(FUSE_GETXATTR, x, Args().add(gx).str("user.a")).err(), EOPNOTSUPP);
  EXPECT_EQ(call(FUSE_LISTXATTR, x, Args().add(gx)).err(), EOPNOTSUPP);
  fuse_setxattr_in sx{};
  EXPECT_EQ(call(FUSE_SETXATTR, x, Args().add(sx).str("user.a").str("v")).err(), EOPNOTSUPP);
  EXPECT_EQ(call(FUSE_REMOVEXATTR, x, Args().str("user.a")).err(), EOPNOTSUPP);
  EXPECT_EQ(call(FUSE_GETLK, x, Args()).err(), ENOSYS);
  EXPECT_EQ(call(FUSE_IOCTL, x, Args()).err(), ENOSYS);
  EXPECT_EQ(call(FUSE_SETUPMAPPING, x, Args()).err(), ENOSYS);
  EXPECT_EQ(call(12345, x, Args()).err(), ENOSYS);

  uint64_t fh = 0;
  ASSERT_EQ(open(x, O_RDONLY, &fh), 0);
  EXPECT_EQ(call(FUSE_DESTROY, 0, Args()).err(), 0);
  EXPECT_EQ(server_->handle_count(), 0u);
  EXPECT_EQ(server_->inode_count(), 1u);      // the root
  EXPECT_EQ(lookup(FUSE_ROOT_ID, "x"), EIO);  // until the next INIT
}

// FORGET drops lookups one by one; the entry goes at zero; the root never goes.
TEST_F(FsTest, ForgetSemantics) {
  start();
  put("f", "data");
  const uint64_t a = node("f");
  EXPECT_EQ(node("f"), a);  // two lookups, one entry
  EXPECT_EQ(server_->inode_count(), 2u);
  forget(a, 1);
  fuse_getattr_in ga{};
  EXPECT_EQ(call(FUSE_GETATTR, a, Args().add(ga)).err(), 0);
  forget(a, 1);
  EXPECT_EQ(call(FUSE_GETATTR, a, Args().add(ga)).err(), EBADF);
  EXPECT_EQ(server_->inode_count(), 1u);
  const uint64_t b = node("f");
  EXPECT_NE(b, a);  // node ids are never reused
  forget(b, UINT64_MAX);
  forget(FUSE_ROOT_ID, 1000);
  forget(987654, 1);  // unknown: ignored
  EXPECT_EQ(call(FUSE_GETATTR, FUSE_ROOT_ID, Args().add(ga)).err(), 0);

  put("g", "x");
  const uint64_t c = node("f"), d = node("g");
  fuse_batch_forget_in bf{};
  bf.count = 2;
  fuse_forget_one o1{c, 1}, o2{d, 1};
  Reply r = call(FUSE_BATCH_FORGET, 0, Args().add(bf).add(o1).add(o2), Shape::with_reply(0));
  EXPECT_EQ(r.used, 0u);
  EXPECT_EQ(server_->inode_count(), 1u);
  EXPECT_EQ(server_->counters().bad_requests, 0u);  // no reply is their normal answer
}

}  // namespace
}  // namespace carapace::fstest
