// Fuzzes the virtio-fs file server (vmm/devices/fs): a few FUSE requests, each one descriptor
// chain, served after INIT over a temporary share rebuilt for every input (a file, a directory
// with a file, a symlink out of the share, a FIFO). Afterwards a file next to the share must be
// unchanged and no fd may have leaked (docs/security.md #54-#59). ASan/UBSan catch any access
// outside the chain's guest buffers.
//
// Input: [mode:1] then up to 4 requests, each [split:2][reply:2][len:2][bytes:len]:
//   mode % 3: 0 ro, 1 rw, 2 rw-nodelete. The request's `len` bytes (its fuse_in_header and
//   arguments, as the guest wrote them) go in one readable descriptor, or two when 0 < split <
//   len; `reply` is the writable descriptor's length (0: none). Node ids start at 2 and handles
//   at 1, so a LOOKUP then an OPEN of what it found is within reach.
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "tests/fuzz/fuzz_memory.h"
#include "vmm/devices/fs/file_server.h"
#include "vmm/virtio/descriptor_chain.h"
#include "vmm/virtio/ring_layout.h"

using namespace carapace;
using namespace carapace::virtio;

namespace {

constexpr uint64_t kTable = fuzz::kRegion0;            // 3 descriptors
constexpr uint64_t kRequest = fuzz::kRegion0 + 0x100;  // readable bytes
constexpr uint64_t kReply = fuzz::kRegion1;            // writable bytes
constexpr size_t kMaxRequest = fuzz::kRegionSize - 0x100;

int remove_entry(const char* p, const struct stat*, int, FTW*) {
  return ::remove(p);
}

size_t open_fds() {
  size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (::readdir(d) != nullptr)
      ++n;
    ::closedir(d);
  }
  return n;
}

struct Fixture {
  std::string dir, share, sentinel;

  Fixture() {
    char tmpl[] = "/tmp/fuzz-fs-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) __builtin_trap();
    dir = tmpl;
    share = dir + "/share";
    sentinel = dir + "/sentinel";
    write_file(sentinel, "outside");
    // A guest may write; a file size limit keeps a fuzzed FALLOCATE or WRITE from filling /tmp.
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim {
      16u << 20, 16u << 20
    };
    ::setrlimit(RLIMIT_FSIZE, &lim);
  }
  ~Fixture() { ::nftw(dir.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

  static void write_file(const std::string& p, const std::string& data) {
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size()))
      __builtin_trap();
    ::close(fd);
  }
  void rebuild() {
    ::nftw(share.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (::mkdir(share.c_str(), 0755) < 0) __builtin_trap();
    write_file(share + "/a", "hello");
    ::mkdir((share + "/d").c_str(), 0755);
    write_file(share + "/d/b", "world");
    (void)!::symlink(sentinel.c_str(), (share + "/out").c_str());
    ::mkfifo((share + "/fifo").c_str(), 0644);
  }
  bool sentinel_intact() const {
    char buf[16] = {};
    int fd = ::open(sentinel.c_str(), O_RDONLY);
    const ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    return n == 7 && std::memcmp(buf, "outside", 7) == 0;
  }
};

uint32_t serve(fs::FileServer& server, const uint8_t* req, size_t len, uint16_t split,
               uint16_t reply) {
  const GuestMemory& mem = fuzz::fuzz_memory();
  static const uint8_t kNone = 0;
  fuzz::load_memory(mem, &kNone, 0);  // zeroes both regions
  (void)mem.write(GuestAddress(kRequest), std::span<const uint8_t>(req, len));
  uint16_t n = 0;
  auto desc = [&](uint64_t addr, uint32_t l, uint16_t flags) {
    Desc d{addr, l, flags, static_cast<uint16_t>(n + 1)};
    (void)mem.write_obj(GuestAddress(kTable + 16ull * n), d);
    ++n;
  };
  const uint16_t more = reply > 0 ? kDescFNext : 0;
  if (split > 0 && split < len) {
    desc(kRequest, split, kDescFNext);
    desc(kRequest + split, static_cast<uint32_t>(len - split), more);
  } else {
    desc(kRequest, static_cast<uint32_t>(len), more);
  }
  if (reply > 0) desc(kReply, reply, kDescFWrite);
  auto table = mem.slice(GuestAddress(kTable), 16 * 4);
  auto chain = DescriptorChain::parse(mem, *table, 4, 0, false);
  if (!chain.ok()) return 0;
  const uint32_t used = server.handle(*chain);
  if (used > chain->writable_bytes()) __builtin_trap();
  return used;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* fx = new Fixture();
  if (size < 1) return 0;
  (void)fuzz::fuzz_memory();  // mapped once, before the fds are counted
  const size_t fds_before = open_fds();
  fuzz::Input in(data, size);
  fx->rebuild();
  FsDeviceConfig config;
  config.tag = "fuzz";
  config.shared_dir = fx->share;
  const uint8_t mode = in.take<uint8_t>() % 3;
  config.mode = mode == 0 ? FsMode::kReadOnly : mode == 1 ? FsMode::kReadWrite : FsMode::kNoDelete;
  config.max_inodes = 8;
  config.max_handles = 4;
  config.max_write = 16384;
  {
    auto server = fs::FileServer::create(config);
    if (!server.ok()) __builtin_trap();
    // INIT first, so the other ops are reached.
    uint8_t init[sizeof(fuse_in_header) + sizeof(fuse_init_in)] = {};
    fuse_in_header h{};
    h.len = sizeof init;
    h.opcode = FUSE_INIT;
    h.unique = 1;
    fuse_init_in ii{};
    ii.major = 7;
    ii.minor = 31;
    std::memcpy(init, &h, sizeof h);
    std::memcpy(init + sizeof h, &ii, sizeof ii);
    serve(**server, init, sizeof init, 0, 256);
    for (int i = 0; i < 4 && !in.empty(); ++i) {
      const uint16_t split = in.take<uint16_t>();
      const uint16_t reply = in.take<uint16_t>();
      size_t len = in.take<uint16_t>();
      len = std::min({len, in.size(), kMaxRequest});
      if (len == 0) break;
      serve(**server, in.data(), len, split, reply);  // at most 64 KiB - 1: within region 1
      in = fuzz::Input(in.data() + len, in.size() - len);
      if ((*server)->inode_count() > config.max_inodes) __builtin_trap();
      if ((*server)->handle_count() > config.max_handles) __builtin_trap();
    }
  }
  if (!fx->sentinel_intact()) __builtin_trap();
  if (open_fds() != fds_before) __builtin_trap();  // every inode and handle fd closed
  return 0;
}
