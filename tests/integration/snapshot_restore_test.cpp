// Snapshot and restore through the real `carapace` binary over KVM: the counter
// scenario runs under `carapace run --api-sock`, is paused and snapshotted through the control
// API mid-run, then `carapace restore --clones 20` runs 20 clones concurrently. Every clone must
// finish with the value of the uninterrupted run, see only its own writes afterwards and carry
// its own vsock CID (docs/security.md #25). Corrupt snapshots (docs/security.md #19-#21) must be
// refused with exit status 2, one line on stderr, and no VM. API calls in the wrong state get 409
// (docs/security.md #27); a snapshot that cannot be written leaves the VM running (24).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/http/http_client.h"
#include "snapshot/snapshot_dir.h"
#include "snapshot/state_file.h"
#include "tests/integration/counter_support.h"
#include "tests/integration/testguest_harness.h"

namespace carapace::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kClones = 20;
const char kCmdline[] =
    "testguest.run=counter testguest.mib=32 testguest.rounds=30 testguest.isolate";

int count_lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

struct Api {
  std::string sock;
  std::pair<int, std::string> call(const std::string& method, const std::string& target,
                                   const std::string& body = "") {
    auto r = http::http_request(sock, method, target, body);
    if (!r.ok()) return {-1, r.error().describe()};
    return {r->status, r->body};
  }
};

std::vector<std::string> run_argv(const std::string& dir, const std::string& tag,
                                  const std::string& extra_cmdline = "") {
  return {carapace_binary(), "run",
          "--kernel",        testguest_image(),
          "--cmdline",       std::string(kCmdline) + extra_cmdline,
          "--mem",           "128",
          "--timeout",       "120",
          "--vsock",         "cid=3,uds=" + dir + "/" + tag + ".vsock"};
}

// One parent run, shared by the tests: snapshotted through the API mid-run, then resumed to its
// end. Its final value is what an uninterrupted run computes (pausing changes nothing in the
// guest's computation; the test below also checks the API did not).
class SnapshotRestoreKvm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/carapace-snaprestore-XXXXXX";
    if (!mkdtemp(tmpl)) return;
    dir_ = tmpl;
    snap_ = dir_ + "/snap";
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  // Takes the snapshot once; later calls return what the first saw.
  static const std::string& parent_final() {
    static std::string value = take_snapshot();
    return value;
  }

  static std::string take_snapshot();

  static std::string dir_, snap_, parent_log_;
};

std::string SnapshotRestoreKvm::dir_, SnapshotRestoreKvm::snap_, SnapshotRestoreKvm::parent_log_;

std::string SnapshotRestoreKvm::take_snapshot() {
  if (dir_.empty() || !kvm_usable()) return "";
  Api api{dir_ + "/parent.api"};
  auto argv = run_argv(dir_, "parent");
  argv.insert(argv.end(), {"--api-sock", api.sock});
  RunningProcess parent(argv);
  if (!parent.wait_for_output("round 3/30 ", std::chrono::seconds(60))) {
    parent_log_ = "the counter never reached round 3:\n" + parent.out() + parent.err();
    return "";
  }
  // docs/security.md #27: resume while running is a conflict and changes nothing.
  auto [st, body] = api.call("PUT", "/vm/resume");
  EXPECT_EQ(st, 409) << body;
  std::tie(st, body) = api.call("PUT", "/vm/pause");
  EXPECT_EQ(st, 200) << body;
  std::tie(st, body) = api.call("PUT", "/vm/pause");
  EXPECT_EQ(st, 409) << body;
  std::tie(st, body) = api.call("GET", "/vm");
  EXPECT_EQ(st, 200);
  EXPECT_NE(body.find("\"paused\""), std::string::npos) << body;
  std::tie(st, body) = api.call("PUT", "/snapshot/create", "{\"dir\": \"" + snap_ + "\"}");
  EXPECT_EQ(st, 200) << body;
  // docs/security.md #24: a snapshot that cannot be written is an error; the VM goes on.
  write_text_file(dir_ + "/not-a-dir", "x");
  std::tie(st, body) =
      api.call("PUT", "/snapshot/create", "{\"dir\": \"" + dir_ + "/not-a-dir/snap\"}");
  EXPECT_EQ(st, 500) << body;
  std::tie(st, body) = api.call("PUT", "/vm/resume");
  EXPECT_EQ(st, 200) << body;
  ProcessResult r = parent.finish(std::chrono::seconds(120));
  parent_log_ = describe(r);
  EXPECT_EQ(r.exit_code, 0) << parent_log_;
  EXPECT_NE(r.out.find("TESTGUEST PASS counter"), std::string::npos) << parent_log_;
  // The socket goes when the VM ends.
  EXPECT_NE(access(api.sock.c_str(), F_OK), 0) << "API socket left behind";
  return counter_final_value(r.out);
}

// Twenty clones of one snapshot: each ends like an uninterrupted run and none sees another's
// writes (docs/security.md #25).
TEST_F(SnapshotRestoreKvm, TwentyClonesFinishWithTheUninterruptedValueAndStayIsolated) {
  ASSERT_TRUE(kvm_usable());
  const std::string expected = parent_final();
  ASSERT_NE(expected, "") << parent_log_;
  // The value of a run nobody paused: the parent's must be the same, or the pause already broke it.
  ProcessResult plain = run_process(run_argv(dir_, "plain"), std::chrono::seconds(150));
  ASSERT_EQ(plain.exit_code, 0) << describe(plain);
  ASSERT_EQ(counter_final_value(plain.out), expected) << describe(plain);
  ProcessResult r =
      run_process({carapace_binary(), "restore", "--snapshot", snap_, "--clones",
                   std::to_string(kClones), "--vsock", "cid=100,uds=" + dir_ + "/clone.vsock",
                   "--console", "file:" + dir_ + "/clone.log", "--timeout", "240"},
                  std::chrono::seconds(300));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  for (int i = 0; i < kClones; ++i) {
    const std::string out = read_text_file(dir_ + "/clone.log." + std::to_string(i));
    EXPECT_EQ(counter_final_value(out), expected) << "clone " << i << ":\n" << out;
    EXPECT_NE(out.find("TESTGUEST PASS counter"), std::string::npos) << out;
    // A clone starts mid-run (after round 3), and sees its own CID.
    EXPECT_EQ(out.find("round 1/30 "), std::string::npos) << out;
    EXPECT_NE(out.find("counter cid " + std::to_string(100 + i) + " isolated"), std::string::npos)
        << "clone " << i << ":\n"
        << out;
  }
}

// With stdio consoles, clones' lines are prefixed and never interleave.
TEST_F(SnapshotRestoreKvm, ClonesOnStdioArePrefixed) {
  ASSERT_TRUE(kvm_usable());
  ASSERT_NE(parent_final(), "") << parent_log_;
  ProcessResult r = run_process({carapace_binary(), "restore", "--snapshot", snap_, "--clones", "2",
                                 "--vsock", "cid=50,uds=" + dir_ + "/p.vsock", "--timeout", "120"},
                                std::chrono::seconds(150));
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(has_line(r.out, "[clone 0] TESTGUEST PASS counter")) << r.out;
  EXPECT_TRUE(has_line(r.out, "[clone 1] TESTGUEST PASS counter")) << r.out;
}

TEST_F(SnapshotRestoreKvm, InspectReportsAValidSnapshot) {
  ASSERT_TRUE(kvm_usable());
  ASSERT_NE(parent_final(), "") << parent_log_;
  ProcessResult r = run_process({carapace_binary(), "snapshot", "inspect", snap_});
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_NE(r.out.find("checksum:       ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vcpu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("virtio"), std::string::npos) << r.out;
}

// A copy of the good snapshot whose state and memory files are replaced by `state` / `memory`
// when given (nullptr: a hard link to the original, which nothing writes).
std::string make_variant(const std::string& good, const std::string& dir, const std::string& name,
                         const std::string* state, const std::string* memory) {
  auto bytes = read_text_file(good + "/state");
  auto decoded = decode_state_file(std::vector<uint8_t>(bytes.begin(), bytes.end()));
  EXPECT_TRUE(decoded.ok());
  std::string mem_name = memory_file_name(decoded.ok() ? decoded->memory_generation : 1);
  std::string v = dir + "/" + name;
  fs::create_directories(v);
  write_text_file(v + "/state", state ? *state : bytes);
  if (memory)
    write_text_file(v + "/" + mem_name, *memory);
  else
    fs::create_hard_link(good + "/" + mem_name, v + "/" + mem_name);
  return v;
}

// The state bytes with the checksum trailer recomputed, so the change gets past the checksum
// and reaches the parser.
std::string with_checksum(std::string s) {
  std::vector<uint8_t> b(s.begin(), s.end() - 8);
  uint64_t sum = state_checksum(b);
  for (int i = 0; i < 8; ++i)
    s[s.size() - 8 + i] = static_cast<char>(sum >> (8 * i));
  return s;
}

// docs/security.md #19, #20, #21: each corruption is exit 2, one line on stderr, and no VM (the
// console file is never created).
TEST_F(SnapshotRestoreKvm, CorruptSnapshotsAreRefusedBeforeAnyVmExists) {
  ASSERT_TRUE(kvm_usable());
  ASSERT_NE(parent_final(), "") << parent_log_;
  const std::string good = read_text_file(snap_ + "/state");
  ASSERT_GT(good.size(), 64u);
  const uint64_t ram = 128ull << 20;

  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x10;
  std::string version = good;
  version[8] = 2;  // the format version follows the 8-byte magic
  std::string oversized = good;
  for (int i = 0; i < 4; ++i)
    oversized[12 + i] = '\xff';  // the CPU template's string length
  std::string other_cpu;
  {
    auto f = decode_state_file(std::vector<uint8_t>(good.begin(), good.end()));
    ASSERT_TRUE(f.ok());
    f->host_cpu.vendor = f->host_cpu.vendor == "AuthenticAMD" ? "GenuineIntel" : "AuthenticAMD";
    auto b = encode_state_file(*f);
    ASSERT_TRUE(b.ok());
    other_cpu.assign(b->begin(), b->end());
  }
  const std::string empty, truncated = good.substr(0, good.size() / 2);
  const std::string short_memory(ram - 4096, '\0'), empty_memory;
  struct Case {
    const char* name;
    const std::string* state;
    const std::string* memory;
    const char* says;
  };
  const std::string version_fixed = with_checksum(version);
  const std::string oversized_fixed = with_checksum(oversized);
  const Case cases[] = {
      {"empty-state", &empty, nullptr, "state"},
      {"truncated-state", &truncated, nullptr, "state"},
      {"flipped-bit", &flipped, nullptr, "checksum"},
      {"wrong-version", &version_fixed, nullptr, "version"},
      {"oversized-length", &oversized_fixed, nullptr, "cpu template"},
      {"other-cpu-vendor", &other_cpu, nullptr, "not compatible"},
      {"empty-memory", nullptr, &empty_memory, "memory"},
      {"short-memory", nullptr, &short_memory, "truncated"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string v = make_variant(snap_, dir_, c.name, c.state, c.memory);
    std::string console = dir_ + "/" + c.name + ".console";
    ProcessResult r = run_process({carapace_binary(), "restore", "--snapshot", v, "--vsock",
                                   "cid=9,uds=" + dir_ + "/" + c.name + ".vsock", "--console",
                                   "file:" + console, "--timeout", "30"});
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_NE(access(console.c_str(), F_OK), 0) << "a VM was built for " << c.name;
  }
}

}  // namespace
}  // namespace carapace::testing
