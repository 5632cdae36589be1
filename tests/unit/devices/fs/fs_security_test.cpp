// Escape attempts through the virtio-fs file server: every one refused, the share and the host
// outside it unchanged (docs/security.md #28, #56, #58).
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <new>

#include "tests/unit/devices/fs/fs_fixture.h"

namespace carapace::fstest {
namespace {

class FsEscapeTest : public FsTest {
 protected:
  void SetUp() override {
    start();
    // A secret next to the share, where only an escape could reach it.
    int fd = ::open((root_ + "/secret").c_str(), O_WRONLY | O_CREAT, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "secret", 6), 6);
    ::close(fd);
  }
  std::string secret() const {
    int fd = ::open((root_ + "/secret").c_str(), O_RDONLY);
    char buf[16] = {};
    ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
  }
};

// docs/security.md #56: symlinks planted on the host are looked up as links and never followed.
TEST_F(FsEscapeTest, SecurityCheck56_PlantedSymlinksAreNeverFollowed) {
  ASSERT_EQ(::symlink((root_ + "/secret").c_str(), path("abs").c_str()), 0);
  ASSERT_EQ(::symlink("../secret", path("rel").c_str()), 0);
  ASSERT_EQ(::symlink("..", path("up").c_str()), 0);
  ASSERT_EQ(::symlink("/proc/self/fd/0", path("magic").c_str()), 0);
  for (const char* name : {"abs", "rel", "up", "magic"}) {
    fuse_entry_out e{};
    ASSERT_EQ(lookup(1, name, &e), 0) << name;
    EXPECT_TRUE(S_ISLNK(e.attr.mode)) << name;
    uint64_t fh = 0;
    EXPECT_EQ(open(e.nodeid, O_RDONLY, &fh), ELOOP) << name;
    EXPECT_EQ(open(e.nodeid, O_RDWR | O_TRUNC, &fh), ELOOP) << name;
    EXPECT_EQ(open(e.nodeid, O_RDONLY, &fh, true), ELOOP) << name;
    EXPECT_EQ(lookup(e.nodeid, "secret"), ENOTDIR) << name;  // never a directory to walk
    fuse_setattr_in sa{};
    sa.valid = FATTR_SIZE;
    EXPECT_NE(call(FUSE_SETATTR, e.nodeid, Args().add(sa)).err(), 0) << name;
    sa.valid = FATTR_MODE;
    sa.mode = 0777;
    EXPECT_EQ(call(FUSE_SETATTR, e.nodeid, Args().add(sa)).err(), EOPNOTSUPP) << name;
    // Times are the link's own (cp -a, tar): set on the link, never on what it names.
    sa.valid = FATTR_MTIME;
    sa.mtime = 1000000;
    EXPECT_EQ(call(FUSE_SETATTR, e.nodeid, Args().add(sa)).err(), 0) << name;
    struct stat link {};
    ASSERT_EQ(::lstat(path(name).c_str(), &link), 0);
    EXPECT_EQ(link.st_mtime, 1000000) << name;
  }
  struct stat target {};
  ASSERT_EQ(::stat((root_ + "/secret").c_str(), &target), 0);
  EXPECT_NE(target.st_mtime, 1000000);
  // A link made from the link: the link itself is linked, never its target.
  fuse_link_in ln{};
  ln.oldnodeid = node("abs");
  ASSERT_EQ(call(FUSE_LINK, 1, Args().add(ln).str("abs2")).err(), 0);
  struct stat st {};
  ASSERT_EQ(::lstat(path("abs2").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(secret(), "secret");
}

// docs/security.md #56: a name swapped for a symlink between LOOKUP and OPEN: OPEN reaches the
// inode LOOKUP found (held by its O_PATH fd), never the link's target.
TEST_F(FsEscapeTest, SecurityCheck56_SymlinkSwappedAfterLookup) {
  put("f", "original");
  const uint64_t f = node("f");
  ASSERT_EQ(::rename(path("f").c_str(), (root_ + "/moved").c_str()), 0);
  ASSERT_EQ(::symlink((root_ + "/secret").c_str(), path("f").c_str()), 0);
  uint64_t fh = 0;
  ASSERT_EQ(open(f, O_RDWR | O_TRUNC, &fh), 0);
  EXPECT_EQ(read(f, fh, 0, 100), "");  // the original, truncated; not the secret
  EXPECT_EQ(write(f, fh, 0, "mine"), 0);
  EXPECT_EQ(secret(), "secret");
  EXPECT_EQ(release(f, fh), 0);
  // A fresh lookup of the name finds the link, which does not open.
  fuse_entry_out e{};
  ASSERT_EQ(lookup(1, "f", &e), 0);
  EXPECT_TRUE(S_ISLNK(e.attr.mode));
  EXPECT_EQ(open(e.nodeid, O_RDONLY, &fh), ELOOP);
}

// docs/security.md #58: FIFOs, sockets and device nodes planted on the host are refused at
// LOOKUP and CREATE, never opened (a FIFO would block the device thread).
TEST_F(FsEscapeTest, SecurityCheck58_SpecialFilesAreRefused) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0666), 0);
  // A device node needs CAP_MKNOD: made when the tests run as root; otherwise the FIFO and the
  // socket stand for every special file (the server refuses them by the same type check).
  std::vector<std::string> special = {"fifo", "sock"};
  if (::mknod(path("null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) special.push_back("null");
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path("sock").c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  for (const std::string& name : special) {
    EXPECT_EQ(lookup(1, name), EACCES) << name;
    uint64_t nid = 0, fh = 0;
    EXPECT_EQ(create(1, name, O_WRONLY, 0644, &nid, &fh), EACCES) << name;
    EXPECT_EQ(create(1, name, O_RDONLY, 0644, &nid, &fh), EACCES) << name;
  }
  ::close(s);
  // READDIRPLUS lists them without a node.
  uint64_t dh = 0;
  ASSERT_EQ(open(1, O_RDONLY, &dh, true), 0);
  fuse_read_in rd{};
  rd.fh = dh;
  rd.size = 8192;
  EXPECT_EQ(call(FUSE_READDIRPLUS, 1, Args().add(rd)).err(), 0);
  EXPECT_EQ(server_->inode_count(), 1u);
  // MKNOD of anything but a regular file.
  for (uint32_t type : {S_IFIFO, S_IFCHR, S_IFBLK, S_IFSOCK, S_IFDIR, S_IFLNK}) {
    fuse_mknod_in mk{};
    mk.mode = type | 0644;
    mk.rdev = makedev(1, 3);
    EXPECT_EQ(call(FUSE_MKNOD, 1, Args().add(mk).str("n")).err(), EPERM) << type;
  }
  EXPECT_FALSE(exists("n"));
}

// docs/security.md #58: setuid and setgid never reach the host.
TEST_F(FsEscapeTest, SecurityCheck58_SetuidAndOwnershipAreRefused) {
  uint64_t nid = 0, fh = 0;
  ASSERT_EQ(create(1, "tool", O_RDWR, 06755, &nid, &fh), 0);
  struct stat st {};
  ASSERT_EQ(::stat(path("tool").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07000, 0u);  // stripped on create
  fuse_setattr_in sa{};
  sa.valid = FATTR_MODE;
  sa.mode = S_IFREG | 04755;
  EXPECT_EQ(call(FUSE_SETATTR, nid, Args().add(sa)).err(), EPERM);
  sa.mode = S_IFREG | 02755;
  EXPECT_EQ(call(FUSE_SETATTR, nid, Args().add(sa)).err(), EPERM);
  sa.valid = FATTR_UID;
  sa.uid = st.st_uid + 1;
  EXPECT_EQ(call(FUSE_SETATTR, nid, Args().add(sa)).err(), EPERM);
  sa.uid = st.st_uid;  // a no-op change is fine
  EXPECT_EQ(call(FUSE_SETATTR, nid, Args().add(sa)).err(), 0);
  fuse_mkdir_in mk{};
  mk.mode = 07777;
  ASSERT_EQ(call(FUSE_MKDIR, 1, Args().add(mk).str("d")).err(), 0);
  ASSERT_EQ(::stat(path("d").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & (S_ISUID | S_ISGID), 0u);
  ASSERT_EQ(::stat(path("tool").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07000, 0u);
}

// docs/security.md #56: node ids are ours: a directory the guest invents (to rename out of the
// share or link in from outside) does not exist.
TEST_F(FsEscapeTest, SecurityCheck56_BogusNodeIdsAreRefused) {
  put("f", "x");
  const uint64_t f = node("f");
  EXPECT_EQ(rename(1, "f", 0, "f"), EBADF);
  EXPECT_EQ(rename(1, "f", 424242, "f"), EBADF);
  EXPECT_EQ(rename(1, "f", f, "g"), ENOTDIR);  // a file is not a directory
  EXPECT_EQ(rename(99, "f", 1, "g"), EBADF);
  fuse_link_in ln{};
  ln.oldnodeid = 77777;
  EXPECT_EQ(call(FUSE_LINK, 1, Args().add(ln).str("l")).err(), EBADF);
  ln.oldnodeid = 1;  // the root: no hard links to directories
  EXPECT_EQ(call(FUSE_LINK, 1, Args().add(ln).str("l")).err(), EPERM);
  EXPECT_EQ(lookup(12345, "f"), EBADF);
  EXPECT_EQ(lookup(f, "x"), ENOTDIR);
  EXPECT_TRUE(exists("f"));
  EXPECT_FALSE(exists("l"));
  EXPECT_EQ(secret(), "secret");
}

// docs/security.md #56: a mount point inside the share is not crossed (RESOLVE_NO_XDEV).
TEST_F(FsEscapeTest, SecurityCheck56_MountPointsAreNotCrossed) {
  ASSERT_EQ(::mkdir(path("mnt").c_str(), 0755), 0);
  // The mount lives in a child's own mount namespace (a user namespace too when not root), so
  // nothing leaks to the host's even if the test dies.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int ns = CLONE_NEWNS | (::geteuid() != 0 ? CLONE_NEWUSER : 0);
    if (::unshare(ns) != 0) ::_exit(100);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(101);
    if (::mount("tmpfs", path("mnt").c_str(), "tmpfs", 0, "size=1m") != 0) ::_exit(102);
    // Guest RAM is not inherited across fork (MADV_DONTFORK): map it afresh. Placement new,
    // not assignment: the old object's munmap could hit the new mapping at the freed address.
    new (&mem_) GuestMemory(make_memory());
    // A server whose root is in this namespace (an fd opened before the unshare walks the old
    // mount tree, where nothing is mounted on mnt).
    start();
    ::_exit(lookup(1, "mnt") == EACCES ? 0 : 103);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "100: unshare, 101/102: mount failed, 103: not refused";
  EXPECT_EQ(lookup(1, "mnt"), 0);  // here, outside that namespace, a plain directory
}

// A host file hard-linked into the share from outside is served (README.md: the share is what
// its names reach; the link was made by the host).
TEST_F(FsEscapeTest, HostHardLinksFromOutsideAreServed) {
  ASSERT_EQ(::link((root_ + "/secret").c_str(), path("shared-by-host").c_str()), 0);
  const uint64_t n = node("shared-by-host");
  uint64_t fh = 0;
  ASSERT_EQ(open(n, O_RDONLY, &fh), 0);
  EXPECT_EQ(read(n, fh, 0, 100), "secret");
}

}  // namespace
}  // namespace carapace::fstest
