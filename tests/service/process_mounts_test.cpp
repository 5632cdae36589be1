// Workspace mounts on the process back end, for real (docs/api.md, Mounts; docs/security.md #65):
// host folders checked by the daemon's core (daemon/core/mounts.h), handed to
// create_process_backend's sandboxes, and every operation of the mode matrix run by Python inside
// the sandbox through the agent, with the errno the kernel gave; then the host folders are checked
// (unchanged where refused, what was made owned by the share's owner). Needs root and
// build/guest/rootfs.ext4 (label image).
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "daemon/backends/backend.h"
#include "daemon/core/mounts.h"

namespace carapace::service {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr uid_t kOwnerUid = 4242;  // "the user": owns the shared files, not the sandbox
constexpr gid_t kOwnerGid = 4243;

// Each operation on a share (argv[1]), printed as {"op": "ok" | "EROFS" | ...}.
constexpr char kMatrixScript[] = R"PY(
import errno, json, os, sys
d = sys.argv[1]
def p(n): return os.path.join(d, n)
def write_at_start():
    fd = os.open(p("existing.txt"), os.O_WRONLY); os.write(fd, b"H"); os.close(fd)
def append():
    fd = os.open(p("existing.txt"), os.O_WRONLY | os.O_APPEND); os.write(fd, b"+\n"); os.close(fd)
def create():
    fd = os.open(p("new.txt"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b"new\n"); os.close(fd)
def open_trunc():
    os.close(os.open(p("otrunc.txt"), os.O_WRONLY | os.O_TRUNC))
ops = {
    "create": create,
    "write": write_at_start,
    "append": append,
    "truncate": lambda: os.truncate(p("trunc.txt"), 0),
    "open_trunc": open_trunc,
    "unlink": lambda: os.unlink(p("victim.txt")),
    "rmdir": lambda: os.rmdir(p("emptydir")),
    "mkdir": lambda: os.mkdir(p("newdir")),
    "rename": lambda: os.rename(p("renameme.txt"), p("renamed.txt")),
    "rename_over": lambda: os.rename(p("src.txt"), p("target.txt")),
    "rename_out": lambda: os.rename(p("outme.txt"), "/tmp/outme.txt"),
    "link": lambda: os.link(p("existing.txt"), p("hardlink.txt")),
    "symlink": lambda: os.symlink("existing.txt", p("symlink.txt")),
    "chmod": lambda: os.chmod(p("chmod.txt"), 0o600),
    "setxattr": lambda: os.setxattr(p("xattr.txt"), "user.carapace", b"1"),
}
out = {}
for name, op in ops.items():
    try:
        op(); out[name] = "ok"
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
st = os.stat(d)
out["owner_inside"] = "%d:%d" % (st.st_uid, st.st_gid)
print(json.dumps(out))
)PY";

// What the kernel must say for each mode. `rw-nodelete` on this back end: Landlock refuses
// removing and truncating (EACCES), and counts any rename of an existing name as removing it;
// writing over existing bytes is not something Landlock can tell from appending (docs/api.md).
struct Expected {
  const char* op;
  const char* ro;
  const char* rw;
  const char* nodelete;
};
constexpr Expected kMatrix[] = {
    {"create", "EROFS", "ok", "ok"},           {"write", "EROFS", "ok", "ok"},
    {"append", "EROFS", "ok", "ok"},           {"truncate", "EROFS", "ok", "EACCES"},
    {"open_trunc", "EROFS", "ok", "EACCES"},   {"unlink", "EROFS", "ok", "EACCES"},
    {"rmdir", "EROFS", "ok", "EACCES"},        {"mkdir", "EROFS", "ok", "ok"},
    {"rename", "EROFS", "ok", "EACCES"},       {"rename_over", "EROFS", "ok", "EACCES"},
    {"rename_out", "EXDEV", "EXDEV", "EXDEV"}, {"link", "EROFS", "ok", "ok"},
    {"symlink", "EROFS", "ok", "ok"},          {"chmod", "EROFS", "ok", "ok"},
    {"setxattr", "EROFS", "ok", "ok"},
};

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Entry {
  std::string content;  // "" for folders and links
  mode_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  bool operator==(const Entry&) const = default;
};

// Every name beneath `dir` (links not followed) with what it holds.
std::map<std::string, Entry> snapshot(const std::string& dir) {
  std::map<std::string, Entry> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    struct stat st {};
    ::lstat(e.path().c_str(), &st);
    Entry x{S_ISREG(st.st_mode) ? slurp(e.path()) : "", st.st_mode, st.st_uid, st.st_gid};
    out[e.path().lexically_relative(dir).string()] = x;
  }
  return out;
}

class ProcessMountsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "the process back end needs root";
    const char* env = std::getenv("CARAPACE_ROOTFS");
    spec_.rootfs = env ? env : CARAPACE_ROOTFS;
    ASSERT_TRUE(fs::exists(spec_.rootfs)) << spec_.rootfs << " missing (ctest -R rootfs_build)";
    dir_ = "/tmp/carapace-process-mounts-" + std::to_string(getpid());
    roots_ = dir_ + "/roots";
    ASSERT_TRUE(fs::create_directories(dir_ + "/state"));
    fs::create_directories(roots_);
    fs::create_directories(dir_ + "/outside");
    std::ofstream(dir_ + "/outside/secret.txt") << "host secret\n";
    ctx_.template_id = "tpl-mnt" + std::to_string(getpid() % 10000);
    ctx_.dir = dir_ + "/state";
    ctx_.carapace_exe = CARAPACE_BINARY;
    ctx_.agent_exe = CARAPACE_AGENT;
    spec_.isolation = Isolation::kProcess;
    spec_.mem_mib = 256;
    spec_.pool_size = 1;
    spec_.agent_timeout_s = 30;
  }
  void TearDown() override {
    if (!ramfs_.empty()) ::umount2(ramfs_.c_str(), MNT_DETACH);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A share as the user leaves it: every file and folder the matrix touches, all the owner's.
  std::string make_share(const std::string& name) {
    std::string d = roots_ + "/" + name;
    fs::create_directories(d + "/emptydir");
    for (const char* f : {"existing.txt", "trunc.txt", "otrunc.txt", "victim.txt", "renameme.txt",
                          "src.txt", "target.txt", "outme.txt", "chmod.txt", "xattr.txt"})
      std::ofstream(d + "/" + f) << "keep " << f << "\n";
    // Links the host planted: inside the sandbox they resolve in the sandbox's own tree.
    fs::create_symlink(dir_ + "/outside/secret.txt", d + "/escape-abs");
    fs::create_symlink("../../outside/secret.txt", d + "/escape-rel");
    for (const auto& e : fs::recursive_directory_iterator(d))
      EXPECT_EQ(::lchown(e.path().c_str(), kOwnerUid, kOwnerGid), 0);
    EXPECT_EQ(::chown(d.c_str(), kOwnerUid, kOwnerGid), 0);
    return d;
  }

  Result<std::unique_ptr<Instance>> acquire(const std::vector<MountRequest>& mounts,
                                            TemplateBackend& tpl, double* ms = nullptr,
                                            std::vector<std::string> roots = {}) {
    if (roots.empty()) roots = {roots_};
    auto resolved = resolve_mounts(mounts, roots, "mounts");
    if (!resolved.ok()) return make_error(resolved.error().message);
    InstanceOptions opts;
    opts.mounts = std::move(*resolved);
    bool from_pool = true;
    const auto t0 = std::chrono::steady_clock::now();
    auto sb = tpl.acquire(opts, &from_pool);
    if (ms)
      *ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_FALSE(from_pool && !mounts.empty()) << "a sandbox with mounts came from the pool";
    return sb;
  }

  static std::string run(Instance& sb, const std::vector<std::string>& argv) {
    auto c = sb.agent().connect();
    EXPECT_TRUE(c.ok()) << c.error().describe();
    if (!c.ok()) return "";
    std::string out;
    auto r = c->exec(
        argv, {}, [&](std::string_view s) { out.append(s); },
        [&](std::string_view s) { out.append(s); });
    EXPECT_TRUE(r.ok()) << r.error().describe();
    return out;
  }

  std::string dir_, roots_, ramfs_;
  BackendContext ctx_;
  TemplateSpec spec_;
};

// docs/security.md #65: the three modes on one sandbox, each share enforced by the kernel (a
// read-only mount, Landlock), what the sandbox makes owned on the host by the share's owner, and
// host links that point out of the share reaching only the sandbox's own tree.
TEST_F(ProcessMountsTest, SecurityCheck65_ModeMatrixIsKernelEnforced) {
  std::map<std::string, std::string> host;
  std::map<std::string, std::map<std::string, Entry>> before;
  for (const char* mode : {"ro", "rw", "rw-nodelete"}) {
    host[mode] = make_share(std::string("share-") + mode);
    before[mode] = snapshot(host[mode]);
  }
  auto tpl = create_process_backend(spec_, ctx_);
  ASSERT_TRUE(tpl.ok()) << tpl.error().describe();
  double pool_ms = 0, mounts_ms = 0;
  {
    bool from_pool = false;
    const auto t0 = std::chrono::steady_clock::now();
    auto pooled = (*tpl)->acquire({}, &from_pool);
    pool_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(pooled.ok()) << pooled.error().describe();
    EXPECT_TRUE(from_pool);
  }
  auto sb = acquire({{host["ro"], "/mnt/ro", MountMode::kRo},
                     {host["rw"], "/work/rw", MountMode::kRw},
                     {host["rw-nodelete"], "/mnt/nd", MountMode::kRwNoDelete}},
                    **tpl, &mounts_ms);
  ASSERT_TRUE(sb.ok()) << sb.error().describe();
  // The figure docs/api.md quotes: a fresh start with its mounts against a pool hit.
  printf("create: pool hit %.1f ms, with 3 mounts (fresh start) %.1f ms\n", pool_ms, mounts_ms);
  RecordProperty("pool_hit_ms", static_cast<int>(pool_ms));
  RecordProperty("with_mounts_ms", static_cast<int>(mounts_ms));
  EXPECT_EQ((*sb)->describe()["mounts"].size(), 3u) << (*sb)->describe().dump();

  const std::map<std::string, std::string> inside = {
      {"ro", "/mnt/ro"}, {"rw", "/work/rw"}, {"rw-nodelete", "/mnt/nd"}};
  for (const auto& [mode, path] : inside) {
    const std::string out = run(**sb, {"python3", "-c", kMatrixScript, path});
    json got = json::parse(out, nullptr, false);
    ASSERT_TRUE(got.is_object()) << mode << ": " << out;
    EXPECT_EQ(got["owner_inside"], "1000:1000") << mode << ": the share's owner is not the sandbox";
    for (const Expected& e : kMatrix) {
      const char* want = mode == "ro" ? e.ro : mode == "rw" ? e.rw : e.nodelete;
      EXPECT_EQ(got.value(e.op, "?"), want) << mode << " " << e.op;
    }
  }

  // ro: nothing changed on the host.
  EXPECT_EQ(snapshot(host["ro"]), before["ro"]);
  // rw: what the sandbox made is the owner's.
  for (const char* made : {"new.txt", "newdir", "hardlink.txt", "symlink.txt", "renamed.txt"}) {
    struct stat st {};
    ASSERT_EQ(::lstat((host["rw"] + "/" + made).c_str(), &st), 0) << made;
    EXPECT_EQ(st.st_uid, kOwnerUid) << made;
    EXPECT_EQ(st.st_gid, kOwnerGid) << made;
  }
  EXPECT_FALSE(fs::exists(host["rw"] + "/victim.txt"));
  EXPECT_EQ(slurp(host["rw"] + "/target.txt"), "keep src.txt\n");
  // rw-nodelete: everything refused is as it was; what was made is the owner's.
  auto after = snapshot(host["rw-nodelete"]);
  for (const char* kept : {"trunc.txt", "otrunc.txt", "victim.txt", "emptydir", "renameme.txt",
                           "src.txt", "target.txt", "outme.txt", "xattr.txt"})
    EXPECT_EQ(after[kept], before["rw-nodelete"][kept]) << kept << " changed";
  EXPECT_EQ(slurp(host["rw-nodelete"] + "/existing.txt"), "Heep existing.txt\n+\n");
  for (const char* made : {"new.txt", "newdir", "hardlink.txt", "symlink.txt"}) {
    ASSERT_TRUE(after.contains(made)) << made;
    EXPECT_EQ(after[made].uid, kOwnerUid) << made;
    EXPECT_EQ(after[made].gid, kOwnerGid) << made;
  }
  EXPECT_EQ(after["chmod.txt"].mode & 0777, 0600u);

  // Links out of the share: resolved inside the sandbox's tree, where the host's file is not.
  const std::string escape =
      run(**sb, {"sh", "-c",
                 "cat /mnt/ro/escape-abs 2>&1; cat /mnt/ro/escape-rel 2>&1; echo; readlink "
                 "/mnt/ro/escape-abs"});
  EXPECT_EQ(escape.find("host secret"), std::string::npos) << escape;
  EXPECT_NE(escape.find("No such file"), std::string::npos) << escape;
  // Outside its shares the sandbox is as before: /work and /tmp keep removal and truncation.
  EXPECT_EQ(run(**sb, {"sh", "-c",
                       "cd /work && echo x > f && true > f && mkdir -p d && mv f d/f && rm -r d "
                       "&& echo > /tmp/t && rm /tmp/t && echo fine"}),
            "fine\n");
  // No fork on this back end, mounts or not.
  InstanceOptions fork_opts;
  fork_opts.mounts = inherited_mounts(
      *resolve_mounts({{host["rw"], "/work/rw", MountMode::kRw}}, {roots_}, "mounts"), false);
  auto forked = (*tpl)->fork(**sb, 1, fork_opts);
  ASSERT_FALSE(forked.ok());
  EXPECT_EQ(forked.error().kind, ErrorKind::kInvalidInput);
  sb->reset();
  (*tpl)->shutdown();
}

// A rw-nodelete share beneath /work: Landlock grants by hierarchy, so /work's own entries (and
// folders made there later) cannot be removed either, as docs/api.md says; /tmp is untouched.
TEST_F(ProcessMountsTest, NodeleteBeneathWorkFreezesWorksOwnEntries) {
  spec_.pool_size = 0;
  const std::string share = make_share("nd");
  auto tpl = create_process_backend(spec_, ctx_);
  ASSERT_TRUE(tpl.ok()) << tpl.error().describe();
  auto sb = acquire({{share, "/work/data", MountMode::kRwNoDelete}}, **tpl);
  ASSERT_TRUE(sb.ok()) << sb.error().describe();
  const std::string out =
      run(**sb, {"sh", "-c",
                 "cd /work; echo x > f; rm f 2>/dev/null || echo work-rm-refused; mkdir d; echo "
                 "y > d/g; rm d/g 2>/dev/null || echo later-dir-rm-refused; echo > /tmp/t && rm "
                 "/tmp/t && echo tmp-fine"});
  EXPECT_EQ(out, "work-rm-refused\nlater-dir-rm-refused\ntmp-fine\n");
  // The files API writes a temporary file and renames it into place: refused in /work here.
  auto c = (*sb)->agent().connect();
  ASSERT_TRUE(c.ok()) << c.error().describe();
  EXPECT_FALSE(c->put_file("up.txt", "x").ok());
  sb->reset();
  (*tpl)->shutdown();
}

// The files API enters a share beneath /work (the agent resolves paths beneath the mount's own
// root, with the same confinement), and nothing else: `..` out of it is still refused.
TEST_F(ProcessMountsTest, TheFilesApiReachesIntoAShareBeneathWork) {
  spec_.pool_size = 0;
  const std::string share = make_share("files");
  auto tpl = create_process_backend(spec_, ctx_);
  ASSERT_TRUE(tpl.ok()) << tpl.error().describe();
  auto sb = acquire({{share, "/work/data", MountMode::kRw}}, **tpl);
  ASSERT_TRUE(sb.ok()) << sb.error().describe();
  auto c = (*sb)->agent().connect();
  ASSERT_TRUE(c.ok()) << c.error().describe();
  ASSERT_TRUE(c->put_file("data/sub/up.txt", "from the files API\n", 0644, true).ok());
  std::ifstream in(share + "/sub/up.txt");
  std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got, "from the files API\n");
  auto read = c->get_file("/work/data/existing.txt");
  ASSERT_TRUE(read.ok()) << read.error().describe();
  EXPECT_EQ(*read, "keep existing.txt\n");
  EXPECT_FALSE(c->get_file("data/../data/existing.txt").ok());
  EXPECT_FALSE(c->get_file("data/escape-abs").ok());  // a link in the share is not followed
  sb->reset();
  (*tpl)->shutdown();
}

// A file system that cannot be idmapped (ramfs) fails the create with one clear line, as bad
// input; nothing is mounted in its place.
TEST_F(ProcessMountsTest, SecurityCheck65_IdmapRefusedFailsTheCreate) {
  spec_.pool_size = 0;
  ramfs_ = roots_ + "/ramfs";
  fs::create_directories(ramfs_);
  ASSERT_EQ(::mount("ramfs", ramfs_.c_str(), "ramfs", 0, "mode=755"), 0) << strerror(errno);
  auto tpl = create_process_backend(spec_, ctx_);
  ASSERT_TRUE(tpl.ok()) << tpl.error().describe();
  // The ramfs is its own mount root: beneath another root it would be a mount point (refused).
  auto sb = acquire({{ramfs_, "/mnt/r", MountMode::kRw}}, **tpl, nullptr, {ramfs_});
  ASSERT_FALSE(sb.ok());
  EXPECT_EQ(sb.error().kind, ErrorKind::kInvalidInput) << sb.error().describe();
  EXPECT_NE(sb.error().describe().find("refuses an idmapped mount"), std::string::npos)
      << sb.error().describe();
  EXPECT_EQ(sb.error().describe().find('\n'), std::string::npos);
  (*tpl)->shutdown();
}

}  // namespace
}  // namespace carapace::service
