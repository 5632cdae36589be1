// Malformed FUSE requests: every one answered with an errno (or nothing, when there is no room
// for a reply), the server and the share unchanged (docs/security.md #54, #55).
#include "tests/unit/devices/fs/fs_fixture.h"

namespace carapace::fstest {
namespace {

// docs/security.md #54: the header itself.
TEST_F(FsTest, SecurityCheck54_HeaderLengthsAreChecked) {
  start();
  put("f", "x");
  // len disagreeing with the chain, either way.
  EXPECT_EQ(call(FUSE_LOOKUP, 1, Args().str("f"), Shape::with_len(40)).err(), EINVAL);
  EXPECT_EQ(call(FUSE_LOOKUP, 1, Args().str("f"), Shape::with_len(4096)).err(), EINVAL);
  EXPECT_EQ(call(FUSE_LOOKUP, 1, Args().str("f"), Shape::with_len(0xffffffff)).err(), EINVAL);
  // Extensions were never negotiated.
  EXPECT_EQ(call(FUSE_LOOKUP, 1, Args().str("f"), Shape::with_extlen(1)).err(), EINVAL);
  // A chain shorter than the header: answered EINVAL with unique 0.
  Reply shorty = call_raw(std::vector<uint8_t>(20, 0), {}, 4096);
  EXPECT_EQ(shorty.err(), EINVAL);
  // No room for a reply header: nothing is written, used length 0.
  fuse_getattr_in ga{};
  EXPECT_EQ(call(FUSE_GETATTR, 1, Args().add(ga), Shape::with_reply(15)).used, 0u);
  EXPECT_EQ(call(FUSE_GETATTR, 1, Args().add(ga), Shape::with_reply(0)).used, 0u);
  // Room for a header but not the reply: EINVAL, and a LOOKUP takes no reference.
  Reply tight = call(FUSE_LOOKUP, 1, Args().str("f"), Shape::with_reply(16));
  EXPECT_EQ(tight.err(), EINVAL);
  EXPECT_EQ(server_->inode_count(), 1u);
  // Oversized: more than any op takes.
  Args huge;
  huge.b.assign((1u << 20) + 16384, 'a');
  EXPECT_EQ(call(FUSE_LOOKUP, 1, huge).err(), EINVAL);
  EXPECT_GT(server_->counters().bad_requests, 0u);
}

// docs/security.md #54: each op's arguments, short and long.
TEST_F(FsTest, SecurityCheck54_ArgumentsAreSizedPerOp) {
  start();
  put("f", "hello");
  const uint64_t f = node("f");
  uint64_t fh = 0;
  ASSERT_EQ(open(f, O_RDWR, &fh), 0);
  struct Case {
    uint32_t op;
    size_t need;  // the op's fixed argument size
  };
  const Case cases[] = {
      {FUSE_GETATTR, sizeof(fuse_getattr_in)},
      {FUSE_SETATTR, sizeof(fuse_setattr_in)},
      {FUSE_OPEN, sizeof(fuse_open_in)},
      {FUSE_READ, sizeof(fuse_read_in)},
      {FUSE_RELEASE, sizeof(fuse_release_in)},
      {FUSE_FSYNC, sizeof(fuse_fsync_in)},
      {FUSE_FLUSH, sizeof(fuse_flush_in)},
      {FUSE_FALLOCATE, sizeof(fuse_fallocate_in)},
      {FUSE_LSEEK, sizeof(fuse_lseek_in)},
      {FUSE_COPY_FILE_RANGE, sizeof(fuse_copy_file_range_in)},
      {FUSE_FORGET, sizeof(fuse_forget_in)},
      {FUSE_STATFS, 0},
      {FUSE_WRITE, sizeof(fuse_write_in)},
      {FUSE_INIT, 16},
  };
  for (const Case& c : cases) {
    if (c.need > 0) {
      Args shortargs;
      shortargs.b.assign(c.need - 1, 0);
      EXPECT_EQ(call(c.op, f, shortargs).err(), EINVAL) << "short op " << c.op;
    }
    if (c.op == FUSE_WRITE || c.op == FUSE_INIT) continue;  // their tails are data / grown
    Args longargs;
    longargs.b.assign(c.need + 8, 0);
    EXPECT_EQ(call(c.op, f, longargs).err(), EINVAL) << "long op " << c.op;
  }
  // INIT past its largest form.
  EXPECT_EQ(call(FUSE_INIT, 0, Args().raw(std::vector<uint8_t>(72, 0))).err(), EINVAL);
  // WRITE: the size field must match the data exactly, and stay within max_write.
  fuse_write_in w{};
  w.fh = fh;
  w.size = 10;
  EXPECT_EQ(call(FUSE_WRITE, f, Args().add(w).str("abc", false)).err(), EINVAL);
  w.size = 2;
  EXPECT_EQ(call(FUSE_WRITE, f, Args().add(w).str("abc", false)).err(), EINVAL);
  w.size = 0xffffffff;
  EXPECT_EQ(call(FUSE_WRITE, f, Args().add(w)).err(), EINVAL);
  EXPECT_EQ(get("f"), "hello");
  // BATCH_FORGET: a count that does not match the bytes.
  fuse_batch_forget_in bf{};
  bf.count = 0x10000000;
  fuse_forget_one one{f, 1};
  EXPECT_EQ(call(FUSE_BATCH_FORGET, 0, Args().add(bf).add(one)).err(), EINVAL);
  // READ of a huge size is capped by the guest's buffer, never an overrun.
  fuse_read_in rd{};
  rd.fh = fh;
  rd.size = 0xffffffff;
  Reply r = call(FUSE_READ, f, Args().add(rd), Shape::with_reply(16 + 3));
  EXPECT_EQ(r.err(), 0);
  EXPECT_EQ(std::string(r.payload.begin(), r.payload.end()), "hel");
  // A handle of another inode, or none.
  put("g", "other");
  const uint64_t g = node("g");
  rd.size = 10;
  EXPECT_EQ(call(FUSE_READ, g, Args().add(rd)).err(), EBADF);
  rd.fh = 999;
  EXPECT_EQ(call(FUSE_READ, f, Args().add(rd)).err(), EBADF);
  EXPECT_EQ(release(f, fh), 0);
}

// docs/security.md #55: names.
TEST_F(FsTest, SecurityCheck55_BadNamesAreRefused) {
  start();
  put("f", "x");
  auto lookup_raw = [&](const Args& a) { return call(FUSE_LOOKUP, 1, a).err(); };
  EXPECT_EQ(lookup_raw(Args().str("f", false)), EINVAL);  // not NUL-terminated
  EXPECT_EQ(lookup_raw(Args().str("")), EINVAL);          // empty
  EXPECT_EQ(lookup_raw(Args()), EINVAL);                  // nothing at all
  EXPECT_EQ(lookup_raw(Args().str(".")), EINVAL);
  EXPECT_EQ(lookup_raw(Args().str("..")), EINVAL);
  EXPECT_EQ(lookup_raw(Args().str("a/b")), EINVAL);
  EXPECT_EQ(lookup_raw(Args().str("/etc")), EINVAL);
  EXPECT_EQ(lookup_raw(Args().str(std::string(256, 'n'))), ENAMETOOLONG);
  EXPECT_EQ(lookup_raw(Args().str("f").str("junk")), EINVAL);  // bytes after the name
  EXPECT_EQ(lookup(1, std::string(255, 'n')), ENOENT);         // the longest name is fine
  fuse_mkdir_in mk{};
  mk.mode = 0755;
  EXPECT_EQ(call(FUSE_MKDIR, 1, Args().add(mk).str("..")).err(), EINVAL);
  EXPECT_EQ(call(FUSE_MKDIR, 1, Args().add(mk).str("x/y")).err(), EINVAL);
  EXPECT_EQ(call(FUSE_UNLINK, 1, Args().str("../f")).err(), EINVAL);
  EXPECT_EQ(call(FUSE_SYMLINK, 1, Args().str("s")).err(), EINVAL);  // no target
  EXPECT_EQ(call(FUSE_SYMLINK, 1, Args().str("s").str("")).err(), EINVAL);
  EXPECT_EQ(rename(1, "f", 1, ".."), EINVAL);
  EXPECT_EQ(rename(1, "..", 1, "g"), EINVAL);
  EXPECT_EQ(get("f"), "x");
  EXPECT_EQ(server_->inode_count(), 1u);
}

TEST_F(FsTest, RequestsBeforeInitAndBadInit) {
  start(FsMode::kReadWrite, 64, 16, false);
  EXPECT_EQ(lookup(1, "x"), EIO);
  fuse_init_in in{};
  in.major = 8;
  in.minor = 0;
  EXPECT_EQ(call(FUSE_INIT, 0, Args().add(in)).err(), EPROTO);
  in.major = 6;
  EXPECT_EQ(call(FUSE_INIT, 0, Args().add(in)).err(), EPROTO);
  EXPECT_FALSE(server_->initialized());
}

// docs/security.md #57: the tables are bounded; exhaustion is an errno, and freeing makes room.
TEST_F(FsTest, SecurityCheck57_InodeAndHandleExhaustion) {
  start(FsMode::kReadWrite, /*max_inodes=*/4, /*max_handles=*/2);
  for (int i = 0; i < 5; ++i)
    put("f" + std::to_string(i), "x");
  const uint64_t a = node("f0"), b = node("f1"), c = node("f2");
  EXPECT_EQ(lookup(1, "f3"), ENFILE);  // root + 3
  EXPECT_EQ(server_->inode_count(), 4u);
  EXPECT_EQ(node("f0"), a);  // an inode already held needs no room
  uint64_t nid = 0, fh = 0;
  EXPECT_EQ(create(1, "new", O_RDWR, 0644, &nid, &fh), ENFILE);
  uint64_t h1 = 0, h2 = 0, h3 = 0;
  EXPECT_EQ(open(a, O_RDONLY, &h1), 0);
  EXPECT_EQ(open(b, O_RDONLY, &h2), 0);
  EXPECT_EQ(open(c, O_RDONLY, &h3), EMFILE);
  EXPECT_EQ(open(1, O_RDONLY, &h3, true), EMFILE);
  EXPECT_EQ(release(a, h1), 0);
  EXPECT_EQ(open(c, O_RDONLY, &h3), 0);
  forget(c, 1);
  EXPECT_EQ(lookup(1, "f3"), 0);
  // READDIRPLUS with a full table: entries come back with node id 0, nothing grows.
  uint64_t dh = 0;
  EXPECT_EQ(release(b, h2), 0);
  ASSERT_EQ(open(1, O_RDONLY, &dh, true), 0);
  fuse_read_in rd{};
  rd.fh = dh;
  rd.size = 8192;
  EXPECT_EQ(call(FUSE_READDIRPLUS, 1, Args().add(rd)).err(), 0);
  EXPECT_EQ(server_->inode_count(), 4u);
  EXPECT_LE(server_->handle_count(), 2u);
}

}  // namespace
}  // namespace carapace::fstest
