// The file server under the fs thread's seccomp filter (docs/security.md #60): every op that
// reaches the host is served in a child that installed the `fs` role's filter first, so a host
// call the role does not list kills the child by SIGSYS (release builds; sanitizer builds log
// instead, vmm/security/README.md). This is how the role's list was found.
#include <signal.h>
#include <sys/wait.h>

#include <functional>

#include "tests/unit/devices/fs/fs_fixture.h"
#include "vmm/security/seccomp.h"

namespace carapace::fstest {
namespace {

class FsSeccompTest : public FsTest {
 protected:
  // Runs `body` in a child under the fs filter; the child's status tells what happened.
  void under_fs_filter(const std::function<void()>& body) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Guest RAM is not inherited (MADV_DONTFORK): the child maps its own, after dropping the
      // parent's (whose munmap could otherwise hit the new mapping at the same address).
      mem_ = GuestMemory();
      mem_ = make_memory();
      // The server is made here: its /proc/self/fd is the process's that opened it.
      start();
      if (!enable_seccomp().ok() || !apply_seccomp(ThreadRole::kFs).ok()) ::_exit(3);
      body();
      ::_exit(::testing::Test::HasFailure() ? 1 : 0);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_FALSE(WIFSIGNALED(status)) << "the child died by signal " << WTERMSIG(status)
                                      << " (SIGSYS: a host call the fs role does not list)";
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "a request failed in the child (see its output above)";
  }
};

TEST_F(FsSeccompTest, SecurityCheck60_EveryOpRunsUnderTheFsFilter) {
  ::mkdir(share().c_str(), 0755);
  put("old.txt", "0123456789");
  under_fs_filter([this] {
    Reply st = call(FUSE_STATFS, FUSE_ROOT_ID, Args());  // fstatfs
    EXPECT_EQ(st.err(), 0);
    uint64_t ino = 0, fh = 0;
    ASSERT_EQ(create(FUSE_ROOT_ID, "a.txt", O_RDWR, 0644, &ino, &fh), 0);  // openat2, fcntl
    EXPECT_EQ(write(ino, fh, 0, "hello world"), 0);                        // pwritev
    EXPECT_EQ(read(ino, fh, 6, 100), "world");                             // preadv
    fuse_setattr_in sa{};
    sa.valid = FATTR_SIZE | FATTR_MODE | FATTR_MTIME | FATTR_ATIME;  // ftruncate, fchmodat,
    sa.size = 5;                                                     // utimensat
    sa.mode = 0600;
    sa.mtime = 1000000;
    EXPECT_EQ(call(FUSE_SETATTR, ino, Args().add(sa)).err(), 0);
    fuse_lseek_in ls{};
    ls.fh = fh;
    ls.whence = SEEK_END;
    EXPECT_EQ(call(FUSE_LSEEK, ino, Args().add(ls)).err(), 0);
    fuse_fsync_in fs{};
    fs.fh = fh;
    EXPECT_EQ(call(FUSE_FSYNC, ino, Args().add(fs)).err(), 0);  // fsync
    fs.fsync_flags = 1;
    EXPECT_EQ(call(FUSE_FSYNC, ino, Args().add(fs)).err(), 0);  // fdatasync
    fuse_fallocate_in fa{};
    fa.fh = fh;
    fa.length = 4096;
    EXPECT_EQ(call(FUSE_FALLOCATE, ino, Args().add(fa)).err(), 0);
    uint64_t ino2 = 0, fh2 = 0;
    ASSERT_EQ(create(FUSE_ROOT_ID, "b.txt", O_RDWR, 0644, &ino2, &fh2), 0);
    fuse_copy_file_range_in cr{};
    cr.fh_in = fh;
    cr.nodeid_out = ino2;
    cr.fh_out = fh2;
    cr.len = 5;
    EXPECT_EQ(call(FUSE_COPY_FILE_RANGE, ino, Args().add(cr)).err(), 0);
    EXPECT_EQ(release(ino, fh), 0);
    EXPECT_EQ(release(ino2, fh2), 0);
    const uint64_t old = node("old.txt");               // lookup: openat2 O_PATH, fstat
    ASSERT_EQ(open(old, O_RDONLY | O_APPEND, &fh), 0);  // openat through /proc/self/fd
    EXPECT_EQ(release(old, fh), 0);

    uint64_t d = 0;
    ASSERT_EQ(mkdir(FUSE_ROOT_ID, "dir", &d), 0);  // mkdirat
    fuse_mknod_in mk{};
    mk.mode = S_IFREG | 0644;
    EXPECT_EQ(call(FUSE_MKNOD, d, Args().add(mk).str("g")).err(), 0);        // mknodat
    Reply sym = call(FUSE_SYMLINK, d, Args().str("s").str("../elsewhere"));  // symlinkat
    ASSERT_EQ(sym.err(), 0);
    EXPECT_EQ(call(FUSE_READLINK, sym.as<fuse_entry_out>().nodeid, Args()).err(), 0);
    fuse_link_in ln{};
    ln.oldnodeid = ino2;
    EXPECT_EQ(call(FUSE_LINK, d, Args().add(ln).str("hard")).err(), 0);  // linkat
    uint64_t dh = 0;
    ASSERT_EQ(open(d, O_RDONLY, &dh, true), 0);
    fuse_read_in rd{};
    rd.fh = dh;
    rd.size = 4096;
    EXPECT_EQ(call(FUSE_READDIR, d, Args().add(rd)).err(), 0);  // getdents64
    EXPECT_EQ(call(FUSE_READDIRPLUS, d, Args().add(rd)).err(), 0);
    fuse_fsync_in dfs{};
    dfs.fh = dh;
    EXPECT_EQ(call(FUSE_FSYNCDIR, d, Args().add(dfs)).err(), 0);
    EXPECT_EQ(release(d, dh, true), 0);
    EXPECT_EQ(rename(d, "g", FUSE_ROOT_ID, "g2"), 0);  // renameat2
    fuse_rename_in r1{};
    r1.newdir = d;
    EXPECT_EQ(call(FUSE_RENAME, FUSE_ROOT_ID, Args().add(r1).str("g2").str("g3")).err(), 0);
    for (const char* name : {"g3", "s", "hard"})
      EXPECT_EQ(call(FUSE_UNLINK, d, Args().str(name)).err(), 0);  // unlinkat
    EXPECT_EQ(call(FUSE_RMDIR, FUSE_ROOT_ID, Args().str("dir")).err(), 0);
    EXPECT_EQ(forget(ino, 1), 0);
    EXPECT_EQ(call(FUSE_DESTROY, 0, Args()).err(), 0);  // every fd closed
  });
  EXPECT_EQ(get("b.txt"), "hello");  // the child's work, seen by the parent
  EXPECT_FALSE(exists("dir"));
}

}  // namespace
}  // namespace carapace::fstest
