// Test helpers for the virtio-fs file server: a temporary share under /tmp, and FUSE requests
// built by hand in fake guest memory as descriptor chains (header and arguments in two readable
// descriptors, the reply in one writable), served by a FileServer.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fuse.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/unit/virtio/test_ring.h"
#include "vmm/devices/fs/file_server.h"
#include "vmm/virtio/descriptor_chain.h"

namespace carapace::fstest {

using namespace virtio;
using namespace virtio::fake;

inline constexpr uint64_t kReqAddr = 0x40000;     // region 0: the request header
inline constexpr uint64_t kArgAddr = 0x41000;     // region 0: its arguments (up to 1.7 MiB)
inline constexpr uint64_t kReplyAddr = 0x400000;  // region 1: the reply (2 MiB room)

// Bytes of a request's arguments.
struct Args {
  std::vector<uint8_t> b;
  template <typename T>
  Args& add(const T& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof v);
    return *this;
  }
  Args& str(const std::string& s, bool nul = true) {
    b.insert(b.end(), s.begin(), s.end());
    if (nul) b.push_back(0);
    return *this;
  }
  Args& raw(const std::vector<uint8_t>& v) {
    b.insert(b.end(), v.begin(), v.end());
    return *this;
  }
};

struct Reply {
  uint32_t used = 0;
  fuse_out_header h{};
  std::vector<uint8_t> payload;
  int err() const { return -h.error; }  // positive errno, 0 on success
  template <typename T>
  T as() const {
    T v{};
    EXPECT_GE(payload.size(), sizeof v);
    std::memcpy(&v, payload.data(), std::min(payload.size(), sizeof v));
    return v;
  }
};

// Options of one request: a wrong len field, a reply buffer of another size.
struct Shape {
  std::optional<uint32_t> len;  // fuse_in_header.len; default: the true length
  uint32_t reply = 1 << 20;     // writable bytes (0: no writable descriptor)
  uint16_t extlen = 0;
  static Shape with_reply(uint32_t n) {
    Shape s;
    s.reply = n;
    return s;
  }
  static Shape with_len(uint32_t n) {
    Shape s;
    s.len = n;
    return s;
  }
  static Shape with_extlen(uint16_t n) {
    Shape s;
    s.extlen = n;
    return s;
  }
};

class FsTest : public ::testing::Test {
 protected:
  FsTest() {
    char tmpl[] = "/tmp/carapace-fs-XXXXXX";
    root_ = ::mkdtemp(tmpl);
  }
  ~FsTest() override {
    server_.reset();
    (void)!std::system(("rm -rf '" + root_ + "'").c_str());
  }

  // The share at share_/ (inside root_, so a test can plant things next to it too).
  void start(FsMode mode = FsMode::kReadWrite, size_t max_inodes = 64, size_t max_handles = 16,
             bool init = true) {
    ::mkdir(share().c_str(), 0755);
    FsDeviceConfig c;
    c.tag = "work";
    c.shared_dir = share();
    c.mode = mode;
    c.max_inodes = max_inodes;
    c.max_handles = max_handles;
    auto s = fs::FileServer::create(c);
    ASSERT_TRUE(s.ok()) << s.error().describe();
    server_ = std::move(*s);
    if (init) {
      fuse_init_in in{};
      in.major = 7;
      in.minor = 31;
      in.max_readahead = 1 << 20;
      in.flags = FUSE_DO_READDIRPLUS | FUSE_BIG_WRITES;
      Reply r = call(FUSE_INIT, 0, Args().add(in));
      ASSERT_EQ(r.err(), 0);
    }
  }
  std::string share() const { return root_ + "/share"; }
  std::string path(const std::string& rel) const { return share() + "/" + rel; }

  // Serves one request; header and arguments in separate descriptors when there are arguments.
  Reply call(uint32_t opcode, uint64_t nodeid, const Args& args, Shape shape = {}) {
    fuse_in_header h{};
    h.len = shape.len.value_or(static_cast<uint32_t>(sizeof h + args.b.size()));
    h.opcode = opcode;
    h.unique = ++unique_;
    h.nodeid = nodeid;
    h.total_extlen = shape.extlen;
    std::vector<uint8_t> head(sizeof h);
    std::memcpy(head.data(), &h, sizeof h);
    return call_raw(head, args.b, shape.reply);
  }
  // A request from raw bytes: `first` and `second` readable (second omitted when empty).
  Reply call_raw(const std::vector<uint8_t>& first, const std::vector<uint8_t>& second,
                 uint32_t reply_len) {
    (void)mem_.write(GuestAddress(kReqAddr), first);
    (void)mem_.write(GuestAddress(kArgAddr), second);
    (void)mem_.fill(GuestAddress(kReplyAddr), 0xee, 4096);
    uint16_t n = 0;
    auto next = [&](bool more) { return more ? kDescFNext : uint16_t{0}; };
    const bool has_second = !second.empty();
    const bool has_reply = reply_len > 0;
    ring_.set_desc(n, kReqAddr, static_cast<uint32_t>(first.size()), next(has_second || has_reply),
                   n + 1);
    ++n;
    if (has_second) {
      ring_.set_desc(n, kArgAddr, static_cast<uint32_t>(second.size()), next(has_reply), n + 1);
      ++n;
    }
    if (has_reply) ring_.set_desc(n, kReplyAddr, reply_len, kDescFWrite);
    auto table = mem_.slice(GuestAddress(kDescAddr), desc_table_bytes(ring_.state.size));
    auto chain = DescriptorChain::parse(mem_, *table, ring_.state.size, 0, true);
    EXPECT_TRUE(chain.ok());
    Reply r;
    r.used = server_->handle(*chain);
    if (r.used >= sizeof(fuse_out_header)) {
      r.h = *mem_.read_obj<fuse_out_header>(GuestAddress(kReplyAddr));
      EXPECT_EQ(r.h.len, r.used);
      EXPECT_EQ(r.h.unique, unique_last(first));
      r.payload.resize(r.used - sizeof(fuse_out_header));
      (void)mem_.read(GuestAddress(kReplyAddr + sizeof(fuse_out_header)), r.payload);
    }
    return r;
  }
  static uint64_t unique_last(const std::vector<uint8_t>& first) {
    if (first.size() < sizeof(fuse_in_header)) return 0;
    fuse_in_header h;
    std::memcpy(&h, first.data(), sizeof h);
    return h.unique;
  }

  // Shorthands: each returns the errno (0 on success) and fills what it gives back.
  int lookup(uint64_t parent, const std::string& name, fuse_entry_out* e = nullptr) {
    Reply r = call(FUSE_LOOKUP, parent, Args().str(name));
    if (r.err() == 0 && e != nullptr) *e = r.as<fuse_entry_out>();
    return r.err();
  }
  uint64_t node(const std::string& name, uint64_t parent = FUSE_ROOT_ID) {
    fuse_entry_out e{};
    EXPECT_EQ(lookup(parent, name, &e), 0) << name;
    return e.nodeid;
  }
  int open(uint64_t nodeid, uint32_t flags, uint64_t* fh = nullptr, bool dir = false) {
    fuse_open_in in{};
    in.flags = flags;
    Reply r = call(dir ? FUSE_OPENDIR : FUSE_OPEN, nodeid, Args().add(in));
    if (r.err() == 0 && fh != nullptr) *fh = r.as<fuse_open_out>().fh;
    return r.err();
  }
  int create(uint64_t parent, const std::string& name, uint32_t flags, uint32_t mode,
             uint64_t* nodeid = nullptr, uint64_t* fh = nullptr) {
    fuse_create_in in{};
    in.flags = flags;
    in.mode = S_IFREG | mode;
    Reply r = call(FUSE_CREATE, parent, Args().add(in).str(name));
    if (r.err() == 0) {
      auto e = r.as<fuse_entry_out>();
      fuse_open_out o{};
      std::memcpy(&o, r.payload.data() + sizeof e, sizeof o);
      if (nodeid != nullptr) *nodeid = e.nodeid;
      if (fh != nullptr) *fh = o.fh;
    }
    return r.err();
  }
  int write(uint64_t nodeid, uint64_t fh, uint64_t off, const std::string& data) {
    fuse_write_in in{};
    in.fh = fh;
    in.offset = off;
    in.size = static_cast<uint32_t>(data.size());
    Reply r = call(FUSE_WRITE, nodeid, Args().add(in).str(data, false));
    if (r.err() == 0) {
      EXPECT_EQ(r.as<fuse_write_out>().size, data.size());
    }
    return r.err();
  }
  std::string read(uint64_t nodeid, uint64_t fh, uint64_t off, uint32_t size, int* err = nullptr) {
    fuse_read_in in{};
    in.fh = fh;
    in.offset = off;
    in.size = size;
    Reply r = call(FUSE_READ, nodeid, Args().add(in));
    if (err != nullptr) *err = r.err();
    return std::string(r.payload.begin(), r.payload.end());
  }
  int release(uint64_t nodeid, uint64_t fh, bool dir = false) {
    fuse_release_in in{};
    in.fh = fh;
    return call(dir ? FUSE_RELEASEDIR : FUSE_RELEASE, nodeid, Args().add(in)).err();
  }
  int mkdir(uint64_t parent, const std::string& name, uint64_t* nodeid = nullptr) {
    fuse_mkdir_in in{};
    in.mode = 0755;
    Reply r = call(FUSE_MKDIR, parent, Args().add(in).str(name));
    if (r.err() == 0 && nodeid != nullptr) *nodeid = r.as<fuse_entry_out>().nodeid;
    return r.err();
  }
  int rename(uint64_t dir, const std::string& from, uint64_t newdir, const std::string& to,
             uint32_t flags = 0) {
    fuse_rename2_in in{};
    in.newdir = newdir;
    in.flags = flags;
    return call(FUSE_RENAME2, dir, Args().add(in).str(from).str(to)).err();
  }
  int forget(uint64_t nodeid, uint64_t n) {
    fuse_forget_in in{};
    in.nlookup = n;
    Reply r = call(FUSE_FORGET, nodeid, Args().add(in), Shape::with_reply(0));
    EXPECT_EQ(r.used, 0u);
    return 0;
  }

  // Host-side helpers.
  void put(const std::string& rel, const std::string& data) {
    int fd = ::open(path(rel).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0) << rel;
    ASSERT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
    ::close(fd);
  }
  std::string get(const std::string& rel) const {
    std::string out;
    int fd = ::open(path(rel).c_str(), O_RDONLY);
    if (fd < 0) return "<absent>";
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0)
      out.append(buf, static_cast<size_t>(n));
    ::close(fd);
    return out;
  }
  bool exists(const std::string& rel) const {
    struct stat st;
    return ::lstat(path(rel).c_str(), &st) == 0;
  }

  GuestMemory mem_ = make_memory();
  TestRing ring_{mem_, 16};
  std::string root_;
  std::unique_ptr<fs::FileServer> server_;
  uint64_t unique_ = 0;
};

}  // namespace carapace::fstest
