// Workspace mounts in the daemon (docs/api.md, Mounts): the request's shape (request_json.h), the
// host folder's checks beneath the mount roots (daemon/core/mounts.h), and the API end to end
// over the fake back end, which shows what it was given (docs/security.md #64, #67).
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon/core/mounts.h"
#include "daemon/core/request_json.h"
#include "tests/service/daemon_harness.h"

namespace carapace::testing {
namespace {

using nlohmann::json;
using service::MountMode;

std::string parse_error(const json& mounts) {
  auto r = service::parse_mounts(mounts, "mounts");
  return r.ok() ? "" : r.error().message;
}

json one(const std::string& host, const std::string& guest, const std::string& mode = "") {
  json m = {{"host_path", host}, {"guest_path", guest}};
  if (!mode.empty()) m["mode"] = mode;
  return m;
}

TEST(MountRequestTest, ParsesTheListWithRoAsTheDefault) {
  auto r = service::parse_mounts(
      json::array({one("/srv/ws/a", "/work/a"), one("/srv/ws/b", "/mnt/b", "rw"),
                   one("/srv/ws/c", "/home/c", "rw-nodelete")}),
      "mounts");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].mode, MountMode::kRo);
  EXPECT_EQ((*r)[1].mode, MountMode::kRw);
  EXPECT_EQ((*r)[2].mode, MountMode::kRwNoDelete);
  EXPECT_EQ(service::mounts_json(*r)[2],
            json({{"host_path", "/srv/ws/c"}, {"guest_path", "/home/c"}, {"mode", "rw-nodelete"}}));
  EXPECT_EQ(parse_error(json::array()), "");
}

// Every bad shape is one line naming the entry and the field; nothing is resolved yet.
TEST(MountRequestTest, EveryBadInputIsOneLineNamingTheField) {
  json nine = json::array();
  for (int i = 0; i < 9; ++i)
    nine.push_back(one("/srv/ws", "/work/m" + std::to_string(i)));
  const std::pair<json, std::string> cases[] = {
      {json("inherit"), "mounts: must be an array"},
      {json::object(), "mounts: must be an array"},
      {nine, "mounts: at most 8 mounts"},
      {json::array({"/srv/ws"}), "mounts[0]: must be an object"},
      {json::array({{{"host_path", "/srv/ws"}, {"guest_path", "/work/a"}, {"size", 1}}}),
       "mounts[0].size: unknown field"},
      {json::array({{{"guest_path", "/work/a"}}}), "mounts[0].host_path: required"},
      {json::array({{{"host_path", "/srv/ws"}}}), "mounts[0].guest_path: required"},
      {json::array({{{"host_path", 5}, {"guest_path", "/work/a"}}}),
       "mounts[0].host_path: required"},
      {json::array({one("srv/ws", "/work/a")}), "mounts[0].host_path: must be an absolute path"},
      {json::array({one("/srv/ws/../etc", "/work/a")}), "mounts[0].host_path: has a '.' or '..'"},
      {json::array({one("/srv/ws/./p", "/work/a")}), "mounts[0].host_path: has a '.' or '..'"},
      {json::array({one("/srv//ws", "/work/a")}), "mounts[0].host_path: has an empty component"},
      {json::array({one("/srv/ws/", "/work/a")}), "mounts[0].host_path: has an empty component"},
      {json::array({one("/", "/work/a")}), "mounts[0].host_path: cannot be /"},
      {json::array({one("/srv/ws", "work/a")}), "mounts[0].guest_path: must be an absolute path"},
      {json::array({one("/srv/ws", "/")}), "mounts[0].guest_path: cannot be /"},
      {json::array({one("/srv/ws", "/work/../etc")}), "mounts[0].guest_path: has a '.' or '..'"},
      {json::array({one("/srv/ws", "/proc/x")}), "mounts[0].guest_path: cannot be /proc"},
      {json::array({one("/srv/ws", "/run/carapace")}), "mounts[0].guest_path: cannot be /run"},
      {json::array({one("/srv/ws", "/work")}), "mounts[0].guest_path: cannot be /work itself"},
      {json::array({one("/srv/ws", "/work/a", "RW")}), "mounts[0].mode: must be \"ro\""},
      {json::array({one("/srv/ws", "/work/a", "rw-no-delete")}), "mounts[0].mode: must be"},
      {json::array({{{"host_path", "/srv/ws"}, {"guest_path", "/work/a"}, {"mode", true}}}),
       "mounts[0].mode: must be"},
      {json::array({one("/srv/ws/a", "/work/a"), one("/srv/ws/b", "/work/a/b")}),
       "mounts[1].guest_path: /work/a/b is the same as or nested with mounts[0] (/work/a)"},
      {json::array({one("/srv/ws/a", "/work/a"), one("/srv/ws/b", "/work/a")}),
       "mounts[1].guest_path: /work/a is the same as or nested with mounts[0]"},
  };
  for (const auto& [mounts, message] : cases) {
    const std::string e = parse_error(mounts);
    EXPECT_EQ(e.rfind(message, 0), 0u) << mounts.dump() << " -> " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(MountRequestTest, ForkTakesInheritAListOrNothing) {
  auto none = service::parse_fork_request(json::object());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->mounts, service::ForkRequest::Mounts::kNone);
  auto inherit = service::parse_fork_request({{"mounts", "inherit"}});
  ASSERT_TRUE(inherit.ok());
  EXPECT_EQ(inherit->mounts, service::ForkRequest::Mounts::kInherit);
  EXPECT_FALSE(inherit->keep_mount_modes);
  auto same = service::parse_fork_request({{"mounts", "inherit"}, {"mounts_mode", "same"}});
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->keep_mount_modes);
  auto list = service::parse_fork_request({{"mounts", json::array({one("/srv/ws", "/mnt/w")})}});
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_EQ(list->mounts, service::ForkRequest::Mounts::kList);
  EXPECT_EQ(list->mount_list.at(0).guest_path, "/mnt/w");
  const std::pair<json, std::string> bad[] = {
      {{{"mounts", "parent"}}, "mounts: must be \"inherit\""},
      {{{"mounts", true}}, "mounts: must be \"inherit\""},
      {{{"mounts", "inherit"}, {"mounts_mode", "rw"}}, "mounts_mode: must be \"ro\""},
      {{{"mounts_mode", "same"}}, "mounts_mode: only with \"mounts\": \"inherit\""},
      {{{"mounts", json::array()}, {"mounts_mode", "same"}}, "mounts_mode: only with"},
      {{{"mounts", json::array({one("/srv/ws", "/sys")})}}, "mounts[0].guest_path: cannot be /sys"},
  };
  for (const auto& [body, message] : bad) {
    auto r = service::parse_fork_request(body);
    ASSERT_FALSE(r.ok()) << body.dump();
    EXPECT_EQ(r.error().message.rfind(message, 0), 0u)
        << body.dump() << " -> " << r.error().message;
  }
}

TEST(MountRequestTest, ConfigMountRoots) {
  auto c = service::parse_daemon_config(R"({"mount_roots": ["/srv/ws", "/home/u/proj"]})");
  ASSERT_TRUE(c.ok()) << c.error().describe();
  EXPECT_EQ(c->mount_roots, (std::vector<std::string>{"/srv/ws", "/home/u/proj"}));
  EXPECT_TRUE(service::parse_daemon_config("{}")->mount_roots.empty());
  for (const char* bad : {R"({"mount_roots": "/srv/ws"})", R"({"mount_roots": [5]})",
                          R"({"mount_roots": ["srv"]})", R"({"mount_roots": ["/srv/../etc"]})",
                          R"({"mount_roots": ["/srv/ws/"]})", R"({"mount_roots": ["/"]})"}) {
    auto r = service::parse_daemon_config(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("mount_roots"), std::string::npos) << r.error().message;
  }
}

// A host tree with a mount root and the usual traps around it.
class MountResolveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = "/tmp/carapace-mounts-" + std::to_string(::getpid());
    root_ = base_ + "/ws";
    std::filesystem::create_directories(root_ + "/proj/sub");
    std::filesystem::create_directories(base_ + "/outside");
    std::filesystem::create_directories(base_ + "/wsevil");
    std::ofstream(root_ + "/file.txt") << "x";
    std::filesystem::create_directory_symlink("/", root_ + "/to-root");
    std::filesystem::create_directory_symlink(base_ + "/outside", root_ + "/to-outside");
    std::filesystem::create_directory_symlink("proj", root_ + "/to-proj");
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(base_, ec);
  }
  std::string resolve_error(const std::string& host, std::vector<std::string> roots = {}) {
    if (roots.empty()) roots = {root_};
    auto r = service::resolve_mounts({{host, "/work/data", MountMode::kRw}}, roots, "mounts");
    return r.ok() ? "" : r.error().message;
  }
  std::string base_, root_;
};

// docs/security.md #64: every host path that is not a real folder beneath a mount root, reached
// without a link or a mount point, is one 400 line; the folder given to the back end is the one
// checked, whatever is swapped in afterwards.
TEST_F(MountResolveTest, SecurityCheck64_HostPathChecks) {
  EXPECT_EQ(resolve_error(root_), "") << "a root itself may be shared";
  EXPECT_EQ(resolve_error(root_ + "/proj/sub"), "");
  const std::pair<std::string, std::string> cases[] = {
      {"proj", "mounts[0].host_path: must be an absolute path"},
      {root_ + "/proj/../file.txt", "mounts[0].host_path: has a '.' or '..' component"},
      {root_ + "/to-root", "mounts[0].host_path: " + root_ + "/to-root is a symlink"},
      {root_ + "/to-outside", "is a symlink (never followed)"},
      {root_ + "/to-proj/sub", root_ + "/to-proj is a symlink"},
      {root_ + "/file.txt", root_ + "/file.txt is not a folder"},
      {root_ + "/missing/x", root_ + "/missing does not exist"},
      {base_ + "/outside", "is not beneath any of the daemon's mount_roots"},
      {base_ + "/wsevil", "is not beneath any of the daemon's mount_roots"},
      {"/etc", "is not beneath any of the daemon's mount_roots"},
  };
  for (const auto& [host, message] : cases) {
    const std::string e = resolve_error(host);
    EXPECT_NE(e.find(message), std::string::npos) << host << " -> " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos);
  }
  auto none = service::resolve_mounts({{root_, "/work/d", MountMode::kRo}}, {}, "mounts");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message,
            "mounts are not enabled: the daemon's config names no mount_roots");
  EXPECT_TRUE(service::resolve_mounts({}, {}, "mounts").ok()) << "no mounts need no roots";

  // The folder checked is the folder passed: swapping the name for a symlink to / afterwards does
  // not move the descriptor.
  auto got =
      service::resolve_mounts({{root_ + "/proj", "/work/d", MountMode::kRw}}, {root_}, "mounts");
  ASSERT_TRUE(got.ok()) << got.error().message;
  std::filesystem::rename(root_ + "/proj", root_ + "/proj.old");
  std::filesystem::create_directory_symlink("/", root_ + "/proj");
  char target[4096] = {};
  const std::string link = "/proc/self/fd/" + std::to_string((*got)[0].dir->get());
  ASSERT_GT(::readlink(link.c_str(), target, sizeof target - 1), 0);
  EXPECT_EQ(std::string(target), root_ + "/proj.old");
  EXPECT_EQ((*got)[0].host_path, root_ + "/proj");
}

// A mount point beneath the root (another file system) is refused (RESOLVE_NO_XDEV); checked in
// a child with a mount namespace of its own, so the host's mounts are left alone.
TEST_F(MountResolveTest, SecurityCheck64_MountPointIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a tmpfs mount in its own namespace)";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr))
      ::_exit(10);
    if (::mount("tmpfs", (root_ + "/proj").c_str(), "tmpfs", 0, "size=64k") != 0) ::_exit(11);
    ::mkdir((root_ + "/proj/in").c_str(), 0755);
    const std::string at = resolve_error(root_ + "/proj");
    const std::string beneath = resolve_error(root_ + "/proj/in");
    const bool ok = at.find(root_ + "/proj is a mount point") != std::string::npos &&
                    beneath.find(root_ + "/proj is a mount point") != std::string::npos;
    ::_exit(ok ? 0 : 12);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// The API over the fake back end, whose instances describe what they were given.
class DaemonMountsTest : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    ws_ = dir_ + "/ws";
    std::filesystem::create_directories(ws_ + "/a");
    std::filesystem::create_directories(ws_ + "/b");
    std::filesystem::create_directory_symlink("/", ws_ + "/root-link");
    start_daemon(R"({"health_interval_s": 0, "mount_roots": [")" + ws_ + R"("]})");
  }
  json mount(const std::string& sub, const std::string& guest, const std::string& mode) {
    return one(ws_ + "/" + sub, guest, mode);
  }
  size_t sandbox_count() { return body_json(call("GET", "/sandboxes"))["sandboxes"].size(); }
  std::string ws_;
};

TEST_F(DaemonMountsTest, CreateShowsItsMountsAndReplacesTheTemplates) {
  const std::string tpl = make_template(
      1, "microvm", R"("mounts": [{"host_path": ")" + ws_ + R"(/a", "guest_path": "/work/a"}])");
  ASSERT_FALSE(tpl.empty());
  json t = body_json(call("GET", "/templates/" + tpl));
  EXPECT_EQ(t["mounts"], json::array({mount("a", "/work/a", "ro")}));
  // The template's default, opened for this sandbox.
  json sb = make_sandbox(tpl);
  EXPECT_EQ(sb["mounts"], json::array({mount("a", "/work/a", "ro")}));
  ASSERT_EQ(sb["backend"]["mounts_given"].size(), 1u);
  EXPECT_EQ(sb["backend"]["mounts_given"][0]["folder"], ws_ + "/a");
  EXPECT_EQ(sb["backend"]["mounts_given"][0]["mode"], "ro");
  // A create's own list replaces the template's; [] is none.
  json own = make_sandbox(tpl, {{"mounts", json::array({mount("b", "/mnt/b", "rw-nodelete")})}});
  EXPECT_EQ(own["mounts"], json::array({mount("b", "/mnt/b", "rw-nodelete")}));
  EXPECT_EQ(own["backend"]["mounts_given"][0]["folder"], ws_ + "/b");
  json bare = make_sandbox(tpl, {{"mounts", json::array()}});
  EXPECT_EQ(bare["mounts"], json::array());
  EXPECT_EQ(body_json(call("GET", "/sandboxes/" + own["id"].get<std::string>()))["mounts"],
            own["mounts"]);
}

// A template's mounts are in its record: a restarted daemon has them, and opens them anew for each
// create (a folder gone meanwhile fails that create, not the reload).
TEST_F(DaemonMountsTest, TemplateMountsSurviveARestart) {
  const std::string config =
      R"({"health_interval_s": 0, "on_shutdown": "persist", "mount_roots": [")" + ws_ + R"("]})";
  start_daemon(config);
  const std::string tpl =
      make_template(0, "microvm",
                    R"("mounts": [{"host_path": ")" + ws_ + R"(/b", "guest_path": "/mnt/b", )" +
                        R"("mode": "rw"}])");
  ASSERT_FALSE(tpl.empty());
  stop_daemon();
  std::filesystem::remove(ws_ + "/b");
  start_daemon(config);
  json t = body_json(call("GET", "/templates/" + tpl));
  EXPECT_EQ(t["mounts"], json::array({mount("b", "/mnt/b", "rw")}));
  auto gone = call("POST", "/sandboxes", json({{"template", tpl}}).dump());
  EXPECT_EQ(gone.status, 400);
  EXPECT_NE(gone.body.find(ws_ + "/b does not exist"), std::string::npos) << gone.body;
  std::filesystem::create_directories(ws_ + "/b");
  EXPECT_EQ(make_sandbox(tpl)["mounts"], t["mounts"]);
}

TEST_F(DaemonMountsTest, SecurityCheck64_BadMountsAre400AndChangeNothing) {
  const std::string tpl = make_template(0);
  const json bodies[] = {
      {{"mounts", json::array({mount("root-link", "/work/r", "ro")})}},
      {{"mounts", json::array({one(ws_ + "/a/../b", "/work/r")})}},
      {{"mounts", json::array({one("/etc", "/work/r")})}},
      {{"mounts", json::array({mount("a", "/proc/a", "ro")})}},
      {{"mounts", json::array({mount("missing", "/work/r", "ro")})}},
  };
  for (const json& extra : bodies) {
    json body = extra;
    body["template"] = tpl;
    auto r = call("POST", "/sandboxes", body.dump());
    EXPECT_EQ(r.status, 400) << body.dump() << " -> " << r.body;
    EXPECT_EQ(body_json(r)["error"]["message"].get<std::string>().find('\n'), std::string::npos);
  }
  EXPECT_EQ(sandbox_count(), 0u);
  EXPECT_EQ(body_json(call("GET", "/templates/" + tpl))["sandboxes"], 0);
  // A template whose default mounts cannot be opened is refused and leaves nothing.
  auto r = call(
      "POST", "/templates",
      json({{"kernel", kernel_}, {"mounts", json::array({mount("root-link", "/work/r", "ro")})}})
          .dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("is a symlink"), std::string::npos) << r.body;
  EXPECT_EQ(body_json(call("GET", "/templates"))["templates"].size(), 1u);
}

TEST_F(DaemonMountsTest, WithoutMountRootsEveryMountIsRefused) {
  start_daemon(R"({"health_interval_s": 0})");
  const std::string tpl = make_template(0);
  auto r = call(
      "POST", "/sandboxes",
      json({{"template", tpl}, {"mounts", json::array({mount("a", "/work/a", "ro")})}}).dump());
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(body_json(r)["error"]["message"],
            "mounts are not enabled: the daemon's config names no mount_roots");
  EXPECT_EQ(sandbox_count(), 0u);
  EXPECT_EQ(call("POST", "/sandboxes", json({{"template", tpl}}).dump()).status, 201)
      << "a sandbox without mounts needs no roots";
}

// docs/security.md #67: a fork child gets no mount unless asked; inherited writable mounts
// become read-only unless the request says "same"; a list of its own is checked as a create's.
TEST_F(DaemonMountsTest, SecurityCheck67_ForkMountsAreDowngradedUnlessAsked) {
  const std::string tpl = make_template(0);
  json parent = make_sandbox(tpl, {{"mounts", json::array({mount("a", "/work/a", "rw"),
                                                           mount("b", "/mnt/b", "rw-nodelete")})}});
  const std::string fork_path = "/sandboxes/" + parent["id"].get<std::string>() + "/fork";
  auto children = [&](const json& body) {
    auto r = call("POST", fork_path, body.dump());
    EXPECT_EQ(r.status, 201) << body.dump() << " -> " << r.body;
    return body_json(r)["children"];
  };
  EXPECT_EQ(children(json::object())[0]["mounts"], json::array());
  json inherited = children({{"mounts", "inherit"}})[0];
  EXPECT_EQ(inherited["mounts"],
            json::array({mount("a", "/work/a", "ro"), mount("b", "/mnt/b", "ro")}));
  EXPECT_EQ(inherited["backend"]["mounts_given"][0]["mode"], "ro");
  EXPECT_EQ(inherited["backend"]["mounts_given"][1]["folder"], ws_ + "/b");
  json same = children({{"mounts", "inherit"}, {"mounts_mode", "same"}, {"count", 2}});
  ASSERT_EQ(same.size(), 2u);
  for (const json& c : same)
    EXPECT_EQ(c["mounts"], parent["mounts"]);
  json own = children({{"mounts", json::array({mount("b", "/work/only-b", "rw")})}})[0];
  EXPECT_EQ(own["mounts"], json::array({mount("b", "/work/only-b", "rw")}));
  const size_t before = sandbox_count();
  auto bad = call("POST", fork_path,
                  json({{"mounts", json::array({mount("root-link", "/work/x", "rw")})}}).dump());
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(call("POST", fork_path, R"({"mounts_mode": "same"})").status, 400);
  EXPECT_EQ(sandbox_count(), before);
}

// A back end that cannot fork (as the process one): the mounts are checked first (400), then
// the fork is refused as before (409).
TEST_F(DaemonMountsTest, ForkOnABackEndThatCannotForkChecksMountsThen409) {
  const std::string tpl = make_template(0, "process");
  json parent = make_sandbox(tpl, {{"mounts", json::array({mount("a", "/work/a", "rw")})}});
  const std::string fork_path = "/sandboxes/" + parent["id"].get<std::string>() + "/fork";
  EXPECT_EQ(call("POST", fork_path, R"({"mounts": [{"host_path": "/etc", "guest_path": "/w/x"}]})")
                .status,
            400);
  EXPECT_EQ(call("POST", fork_path, R"({"mounts": "inherit"})").status, 409);
}

}  // namespace
}  // namespace carapace::testing
