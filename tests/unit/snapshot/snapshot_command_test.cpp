// `carapace snapshot inspect`: what it prints and its exit status for valid, corrupt and
// incomplete snapshots and bad usage.
#include "vmm/cli/snapshot_command.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "snapshot/snapshot_dir.h"
#include "tests/unit/snapshot/snapshot_test_util.h"

namespace carapace {
namespace {

using testing::kPage;
using testing::TempDir;

struct CmdResult {
  int status;
  std::string out, err;
};

CmdResult run(const std::vector<std::string>& args) {
  char* out_buf = nullptr;
  char* err_buf = nullptr;
  size_t out_len = 0, err_len = 0;
  FILE* out = ::open_memstream(&out_buf, &out_len);
  FILE* err = ::open_memstream(&err_buf, &err_len);
  int status = cmd_snapshot(args, out, err);
  fclose(out);
  fclose(err);
  CmdResult r{status, std::string(out_buf, out_len), std::string(err_buf, err_len)};
  free(out_buf);
  free(err_buf);
  return r;
}

void write_snap(const std::string& dir) {
  auto mem = testing::make_memory({{GuestAddress(0), 64 * kPage}});
  ASSERT_TRUE(mem.write_obj(GuestAddress(0), uint64_t{1}).ok());
  ASSERT_TRUE(write_snapshot(dir, testing::make_state(), mem).ok());
}

TEST(SnapshotCommandTest, InspectValidSnapshot) {
  TempDir tmp;
  write_snap(tmp.path());
  CmdResult r = run({"inspect", tmp.path()});
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* want :
       {"checksum:       ok", "format version: 1", "cpu template:   baseline",
        "(same as this host)", "memory file:    memory-1, 262144 bytes", "size ok",
        "sections:       4", "vcpu             index 1    version 2   40 bytes",
        "[0x0, 0x40000) at file offset 0x0"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << "missing '" << want << "' in\n" << r.out;
  }
}

TEST(SnapshotCommandTest, CorruptStateIsStatus1) {
  TempDir tmp;
  write_snap(tmp.path());
  std::fstream f(tmp.sub("state"), std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(30);
  f.put('\x5a');
  f.close();
  CmdResult r = run({"inspect", tmp.path()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("checksum:       MISMATCH"), std::string::npos) << r.out;
  // Nothing past the checksum is parsed, so nothing of it is printed.
  EXPECT_EQ(r.out.find("sections"), std::string::npos);
}

TEST(SnapshotCommandTest, ShortMemoryFileIsStatus1) {
  TempDir tmp;
  write_snap(tmp.path());
  ASSERT_EQ(::truncate(tmp.sub("memory-1").c_str(), 4096), 0);
  CmdResult r = run({"inspect", tmp.path()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("SIZE MISMATCH"), std::string::npos) << r.out;
  ASSERT_EQ(::unlink(tmp.sub("memory-1").c_str()), 0);
  r = run({"inspect", tmp.path()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("MISSING"), std::string::npos) << r.out;
}

TEST(SnapshotCommandTest, MissingSnapshotIsStatus1) {
  TempDir tmp;
  EXPECT_EQ(run({"inspect", tmp.path()}).status, 1);
  EXPECT_EQ(run({"inspect", tmp.sub("absent")}).status, 1);
}

TEST(SnapshotCommandTest, BadUsageIsStatus2) {
  EXPECT_EQ(run({}).status, 2);
  EXPECT_EQ(run({"inspect"}).status, 2);
  EXPECT_EQ(run({"inspect", "a", "b"}).status, 2);
  EXPECT_EQ(run({"frobnicate", "a"}).status, 2);
  CmdResult help = run({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("usage: carapace snapshot inspect DIR"), std::string::npos);
}

}  // namespace
}  // namespace carapace
