// The per-VM control API (`carapace run --api-sock`) against a fake VM: state machine, wrong-state
// calls (409, nothing changed: docs/security.md #27), bad bodies (400: docs/security.md #26),
// socket removed on stop.
#include "vmm/control/vm_api.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/http/http_client.h"
#include "tests/unit/api/http_test_util.h"

namespace carapace {
namespace {

using State = VmControl::State;

class FakeVm : public VmControl {
 public:
  State state() const override { return state_; }
  uint32_t vcpus() const override { return 2; }
  uint64_t mem_bytes() const override { return 256ull << 20; }
  Status pause() override {
    ++pauses;
    state_ = State::kPaused;
    return {};
  }
  Status resume() override {
    ++resumes;
    state_ = State::kRunning;
    return {};
  }
  Result<nlohmann::json> snapshot(const std::string& dir, bool resume_after) override {
    ++snapshots;
    last_dir = dir;
    if (fail_snapshot) return sys_error("write memory", ENOSPC);
    state_ = resume_after ? State::kRunning : State::kPaused;
    return nlohmann::json{{"dir", dir}};
  }
  Result<nlohmann::json> fork(uint32_t clones) override {
    forks += clones;
    return nlohmann::json{{"children", nlohmann::json::array()}};
  }
  std::map<std::string, uint64_t> counters() const override {
    return {{"console_bytes_dropped", 7}, {"fs1_requests", 12}};
  }
  std::vector<FsShare> fs_shares() const override { return shares; }
  Status bind_fs(const std::string& tag, const std::string& path, FsMode mode) override {
    ++binds;
    if (path == "/not/a/dir")
      return as_invalid_input(sys_error("virtio-fs: opening the shared folder", ENOTDIR));
    if (path == "/raced") {  // the guest mounted between the listing and the bind
      Error e = as_invalid_input(make_error("mounted"));
      e.sys_errno = EBUSY;
      return e;
    }
    for (auto& s : shares)
      if (s.tag == tag) {
        s.path = path;
        s.mode = mode;
      }
    return {};
  }

  State state_ = State::kRunning;
  int pauses = 0, resumes = 0, snapshots = 0;
  uint32_t forks = 0;
  int binds = 0;
  std::vector<FsShare> shares = {{"work", "/srv/work", FsMode::kReadWrite, false},
                                 {"later", "", FsMode::kReadOnly, false}};
  bool fail_snapshot = false;
  std::string last_dir;
};

struct Reply {
  int status = 0;
  nlohmann::json body;
};

class VmApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("vm.sock");
    auto api = VmApi::start(path_, vm_);
    ASSERT_TRUE(api.ok()) << api.error().describe();
    api_ = std::move(*api);
  }

  Reply call(std::string_view method, std::string_view target, std::string_view body = {}) {
    auto r = http::http_request(path_, method, target, body);
    EXPECT_TRUE(r.ok()) << r.error().describe();
    if (!r.ok()) return {};
    Reply out{r->status, nlohmann::json::parse(r->body, nullptr, false)};
    return out;
  }

  http::test::TempDir dir_;
  std::string path_;
  FakeVm vm_;
  std::unique_ptr<VmApi> api_;
};

TEST_F(VmApiTest, StatusReportsStateVcpusAndMemory) {
  Reply r = call("GET", "/vm");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body["state"], "running");
  EXPECT_EQ(r.body["vcpus"], 2);
  EXPECT_EQ(r.body["mem_mib"], 256);
  EXPECT_EQ(r.body["counters"]["console_bytes_dropped"], 7);
}

TEST_F(VmApiTest, PauseThenResume) {
  EXPECT_EQ(call("PUT", "/vm/pause").status, 200);
  EXPECT_EQ(call("GET", "/vm").body["state"], "paused");
  Reply r = call("PUT", "/vm/resume", "{}");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body["state"], "running");
}

// docs/security.md #27: a call in the wrong state is 409 and changes nothing.
TEST_F(VmApiTest, WrongStateCallsAreConflictsAndChangeNothing) {
  Reply r = call("PUT", "/vm/resume");
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.body["error"]["code"], "conflict");
  EXPECT_EQ(vm_.resumes, 0);

  ASSERT_EQ(call("PUT", "/vm/pause").status, 200);
  EXPECT_EQ(call("PUT", "/vm/pause").status, 409);
  EXPECT_EQ(vm_.pauses, 1);

  vm_.state_ = State::kEnded;
  EXPECT_EQ(call("PUT", "/vm/pause").status, 409);
  EXPECT_EQ(call("PUT", "/vm/resume").status, 409);
  EXPECT_EQ(call("PUT", "/snapshot/create", R"({"dir": "/tmp/x"})").status, 409);
  EXPECT_EQ(vm_.pauses, 1);
  EXPECT_EQ(vm_.resumes, 0);
  EXPECT_EQ(vm_.snapshots, 0);
  EXPECT_EQ(call("GET", "/vm").body["state"], "ended");
}

// docs/security.md #26: malformed or unexpected bodies are 400 before anything happens.
TEST_F(VmApiTest, BadBodiesAreRefused) {
  EXPECT_EQ(call("PUT", "/vm/pause", "{").status, 400);
  EXPECT_EQ(call("PUT", "/vm/pause", R"({"now": true})").status, 400);
  EXPECT_EQ(call("PUT", "/snapshot/create", "").status, 400);
  EXPECT_EQ(call("PUT", "/snapshot/create", "[1]").status, 400);
  EXPECT_EQ(call("PUT", "/snapshot/create", R"({"dir": 5})").status, 400);
  EXPECT_EQ(call("PUT", "/snapshot/create", R"({"dir": "/a", "resume": "yes"})").status, 400);
  EXPECT_EQ(call("PUT", "/snapshot/create", R"({"dir": "/a", "extra": 1})").status, 400);
  EXPECT_EQ(call("PUT", "/snapshot/create", R"({"dir": "relative/dir"})").status, 400);
  EXPECT_EQ(call("PUT", "/snapshot/create", R"({"dir": "/a/../../etc"})").status, 400);
  EXPECT_EQ(call("PUT", "/snapshot/create", R"({"dir": "/a\u0000b"})").status, 400);
  EXPECT_EQ(vm_.pauses + vm_.snapshots, 0);
  EXPECT_EQ(call("GET", "/vm").body["state"], "running");
  EXPECT_EQ(call("POST", "/vm/pause").status, 405);
  EXPECT_EQ(call("GET", "/nothing").status, 404);
}

TEST_F(VmApiTest, SnapshotResumesPerFieldDefaultingToThePreviousState) {
  Reply r = call("PUT", "/snapshot/create", R"({"dir": "/tmp/snap-a"})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body["state"], "running");
  EXPECT_EQ(vm_.last_dir, "/tmp/snap-a");
  r = call("PUT", "/snapshot/create", R"({"dir": "/tmp/snap-a", "resume": false})");
  EXPECT_EQ(r.body["state"], "paused");
  r = call("PUT", "/snapshot/create", R"({"dir": "/tmp/snap-a"})");
  EXPECT_EQ(r.body["state"], "paused");
  r = call("PUT", "/snapshot/create", R"({"dir": "/tmp/snap-a", "resume": true})");
  EXPECT_EQ(r.body["state"], "running");
}

// docs/security.md #24: a failed snapshot is an error and leaves the VM as it was.
TEST_F(VmApiTest, FailedSnapshotIsAServerErrorAndTheVmGoesOn) {
  vm_.fail_snapshot = true;
  Reply r = call("PUT", "/snapshot/create", R"({"dir": "/tmp/full-disk"})");
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("write memory"), std::string::npos);
  EXPECT_EQ(call("GET", "/vm").body["state"], "running");
}

// docs/security.md #26, #27: fork takes a bounded count and is refused once the VM ended.
TEST_F(VmApiTest, ForkChecksItsCountAndState) {
  EXPECT_EQ(call("PUT", "/vm/fork", R"({"clones": 3})").status, 200);
  EXPECT_EQ(vm_.forks, 3u);
  EXPECT_EQ(call("PUT", "/vm/fork", R"({"clones": 0})").status, 400);
  EXPECT_EQ(call("PUT", "/vm/fork", R"({"clones": 65})").status, 400);
  EXPECT_EQ(call("PUT", "/vm/fork", R"({"clones": -1})").status, 400);
  EXPECT_EQ(call("PUT", "/vm/fork", R"({"clones": "2"})").status, 400);
  EXPECT_EQ(call("PUT", "/vm/fork", R"({"clones": 1, "extra": 1})").status, 400);
  EXPECT_EQ(call("PUT", "/vm/fork", "").status, 400);
  vm_.state_ = State::kEnded;
  EXPECT_EQ(call("PUT", "/vm/fork", R"({"clones": 1})").status, 409);
  EXPECT_EQ(vm_.forks, 3u) << "a refused fork must change nothing";
}

TEST_F(VmApiTest, FsListsEveryShare) {
  Reply r = call("GET", "/fs");
  ASSERT_EQ(r.status, 200);
  const auto& list = r.body["filesystems"];
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["tag"], "work");
  EXPECT_EQ(list[0]["path"], "/srv/work");
  EXPECT_EQ(list[0]["mode"], "rw");
  EXPECT_EQ(list[0]["mounted"], false);
  EXPECT_TRUE(list[1]["path"].is_null());
  EXPECT_TRUE(list[1]["mode"].is_null());
  EXPECT_EQ(list[1]["counters"]["requests"], 12);
}

TEST_F(VmApiTest, FsBindsAnUnboundShare) {
  Reply r = call("PUT", "/fs/later", R"({"path": "/srv/later", "mode": "rw-nodelete"})");
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["tag"], "later");
  EXPECT_EQ(r.body["path"], "/srv/later");
  EXPECT_EQ(r.body["mode"], "rw-nodelete");
  r = call("PUT", "/fs/work", R"({"path": "/srv/other"})");
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.body["mode"], "ro");  // the default
  vm_.state_ = State::kPaused;      // a pooled VM is bound before it resumes
  EXPECT_EQ(call("PUT", "/fs/work", R"({"path": "/srv/work"})").status, 200);
}

// docs/security.md #62: every bad bind is one line (400, 409) and changes nothing.
TEST_F(VmApiTest, SecurityCheck62_BadBindRequestsAreRefused) {
  auto one_line = [](const Reply& r) {
    return r.body["error"]["message"].get<std::string>().find('\n') == std::string::npos;
  };
  for (const char* body :
       {"", "{", R"({"mode": "ro"})", R"({"path": 5})", R"({"path": "relative"})",
        R"({"path": "/a/../etc"})", R"({"path": "/a\u0000b"})", R"({"path": "/a", "mode": "rwx"})",
        R"({"path": "/a", "mode": 1})", R"({"path": "/a", "extra": 1})"}) {
    SCOPED_TRACE(body);
    Reply r = call("PUT", "/fs/work", body);
    EXPECT_EQ(r.status, 400);
    EXPECT_TRUE(one_line(r));
  }
  EXPECT_EQ(vm_.binds, 0);
  Reply unknown = call("PUT", "/fs/nope", R"({"path": "/a"})");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.body["error"]["message"].get<std::string>().find("tag"), std::string::npos);
  Reply not_dir = call("PUT", "/fs/work", R"({"path": "/not/a/dir"})");
  EXPECT_EQ(not_dir.status, 400);
  EXPECT_TRUE(one_line(not_dir));
  EXPECT_EQ(call("PUT", "/fs/work", R"({"path": "/raced"})").status, 409);
  vm_.shares[0].mounted = true;
  const int before = vm_.binds;
  Reply busy = call("PUT", "/fs/work", R"({"path": "/srv/x"})");
  EXPECT_EQ(busy.status, 409);
  EXPECT_EQ(busy.body["error"]["code"], "conflict");
  EXPECT_EQ(vm_.binds, before);
  vm_.state_ = State::kEnded;
  EXPECT_EQ(call("PUT", "/fs/later", R"({"path": "/srv/x"})").status, 409);
  EXPECT_EQ(vm_.shares[0].path, "/srv/work");
  EXPECT_EQ(vm_.shares[1].path, "");
}

TEST_F(VmApiTest, StopRemovesTheSocket) {
  ASSERT_EQ(access(path_.c_str(), F_OK), 0);
  api_->stop();
  EXPECT_NE(access(path_.c_str(), F_OK), 0);
  api_->stop();  // idempotent
}

}  // namespace
}  // namespace carapace
