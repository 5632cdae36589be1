// fs: virtio-fs (virtio 1.2 §5.11) through the test guest's FUSE driver, against a share the host
// test prepared: `hello.txt` (printable text), `victim.txt`, and two planted symlinks, `escape`
// (to a file outside the share) and `escape-dir` (to a folder outside it). The guest reads
// hello.txt, tries to leave the share (a `..` lookup, OPEN of `escape`, a lookup beneath
// `escape-dir`: all must fail, or the scenario fails), then creates and writes guest.txt, makes
// guest-dir, unlinks victim.txt and lists the root. What the share's mode allows is the host's
// business: the guest prints each result (`errno 0` for success) and the host test checks them
// and its folder.
//
//   testguest.run=fs [testguest.fs.wait-bound] [testguest.fs.hold]
//   wait-bound: the device may be unbound (every request ENOTCONN): INIT is retried until a share
//               is bound (a restore with --fs ...,path=, or PUT /fs/{tag}), then the rest runs.
//   hold:       after reading hello.txt the session stays live until the host creates `go` in
//               the share; then DESTROY ends it and the CPU parks (the host ends the VM).
#include "guest/testguest/virtio/fs.h"
#include "guest/testguest/cmdline.h"
#include "guest/testguest/console.h"
#include "guest/testguest/cpu.h"
#include "guest/testguest/scenario.h"
#include "guest/testguest/text.h"
#include "guest/testguest/virtio/dma.h"

namespace testguest {
namespace {

using namespace virtio;

constexpr uint64_t kPollCycles = 100'000'000;  // ~30-50 ms between retries
constexpr uint32_t kPollTries = 3000;
constexpr uint32_t kOpenRdonly = 0, kOpenWronly = 1, kOpenCreat = 0100, kOpenExcl = 0200;
constexpr uint32_t kOpenDirectory = 0200000;
constexpr char kWritten[] = "written by the guest\n";

void spin(uint64_t cycles) {
  Deadline d(cycles);
  while (!d.expired())
    cpu_relax();
}

Dec err(int e) {
  return dec(static_cast<uint64_t>(e < 0 ? -e : e));
}

struct Names {
  static constexpr int kMax = 16;
  char name[kMax][40];
  int count = 0;
  void add(const char* s, uint32_t n) {
    if (count == kMax || n >= sizeof name[0]) return;
    for (uint32_t i = 0; i < n; ++i)
      name[count][i] = s[i];
    name[count][n] = 0;
    ++count;
  }
  static bool less(const char* a, const char* b) {
    while (*a && *a == *b)
      ++a, ++b;
    return static_cast<unsigned char>(*a) < static_cast<unsigned char>(*b);
  }
  void sort() {
    for (int i = 1; i < count; ++i)
      for (int j = i; j > 0 && less(name[j], name[j - 1]); --j)
        for (uint32_t k = 0; k < sizeof name[0]; ++k) {
          const char t = name[j][k];
          name[j][k] = name[j - 1][k];
          name[j - 1][k] = t;
        }
  }
};

// READDIR of the root, every fuse_dirent (FUSE_DIRENT_ALIGN'ed) but "." and "..".
const char* list_root(FsDriver& fs, Names& names) {
  uint64_t fh = 0;
  if (fs.open(FUSE_ROOT_ID, kOpenRdonly | kOpenDirectory, fh, true) != 0) return "OPENDIR failed";
  static uint8_t buf[4096];
  uint64_t offset = 0;
  for (int rounds = 0; rounds < 64; ++rounds) {
    uint32_t got = 0;
    if (fs.readdir(FUSE_ROOT_ID, fh, offset, buf, sizeof buf, got) != 0) return "READDIR failed";
    if (got == 0) break;
    for (uint32_t at = 0; at + FUSE_NAME_OFFSET <= got;) {
      fuse_dirent d;
      copy_bytes(&d, buf + at, FUSE_NAME_OFFSET);
      if (d.namelen == 0 || at + FUSE_NAME_OFFSET + d.namelen > got) return "bad fuse_dirent";
      const char* name = reinterpret_cast<const char*>(buf + at + FUSE_NAME_OFFSET);
      const bool dots = (d.namelen == 1 && name[0] == '.') ||
                        (d.namelen == 2 && name[0] == '.' && name[1] == '.');
      if (!dots) names.add(name, d.namelen);
      offset = d.off;
      at += FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + d.namelen);
    }
  }
  (void)fs.release(FUSE_ROOT_ID, fh, true);
  names.sort();
  return nullptr;
}

// The escape attempts: each must be refused by the host (docs/security.md #56).
const char* try_escapes(FsDriver& fs) {
  fuse_entry_out e;
  const int dots = fs.lookup(FUSE_ROOT_ID, "..", e);
  out << "testguest: fs lookup .. errno " << err(dots) << "\n";
  if (dots == 0) return "a lookup of .. succeeded";
  if (fs.lookup(FUSE_ROOT_ID, "escape", e) != 0) return "no planted symlink `escape` in the share";
  uint64_t fh = 0;
  const int opened = fs.open(e.nodeid, kOpenRdonly, fh);
  out << "testguest: fs open escape errno " << err(opened) << "\n";
  if (opened == 0) return "OPEN followed a planted symlink out of the share";
  if (fs.lookup(FUSE_ROOT_ID, "escape-dir", e) != 0) return "no planted symlink `escape-dir`";
  fuse_entry_out inside;
  const int beneath = fs.lookup(e.nodeid, "passwd", inside);
  out << "testguest: fs lookup escape-dir/passwd errno " << err(beneath) << "\n";
  if (beneath == 0) return "a lookup went through a planted symlink out of the share";
  return nullptr;
}

const char* read_hello(FsDriver& fs) {
  fuse_entry_out e;
  if (int r = fs.lookup(FUSE_ROOT_ID, "hello.txt", e); r != 0) {
    out << "testguest: fs lookup hello.txt errno " << err(r) << "\n";
    return "LOOKUP hello.txt failed";
  }
  fuse_attr_out a;
  if (fs.getattr(e.nodeid, a) != 0) return "GETATTR hello.txt failed";
  uint64_t fh = 0;
  if (fs.open(e.nodeid, kOpenRdonly, fh) != 0) return "OPEN hello.txt failed";
  static char text[256];
  uint32_t got = 0;
  if (fs.read(e.nodeid, fh, 0, text, sizeof text - 1, got) != 0) return "READ hello.txt failed";
  text[got] = 0;
  if (fs.release(e.nodeid, fh) != 0) return "RELEASE hello.txt failed";
  if (got != a.attr.size) return "READ returned another size than GETATTR";
  out << "testguest: fs read hello.txt " << dec(got) << " bytes: " << text << "\n";
  if (!fs.forget(e.nodeid, 1)) return "FORGET hello.txt was not used";
  return nullptr;
}

// Create-write, mkdir and unlink: results printed, never a failure of the scenario (the share's
// mode decides them).
const char* change_things(FsDriver& fs) {
  fuse_entry_out e;
  uint64_t fh = 0;
  const int created =
      fs.create(FUSE_ROOT_ID, "guest.txt", kOpenWronly | kOpenCreat | kOpenExcl, 0100644, e, fh);
  out << "testguest: fs create guest.txt errno " << err(created) << "\n";
  if (created == 0) {
    uint32_t written = 0;
    const int w = fs.write(e.nodeid, fh, 0, kWritten, sizeof kWritten - 1, written);
    out << "testguest: fs write guest.txt errno " << err(w) << " " << dec(written) << " bytes\n";
    if (fs.release(e.nodeid, fh) != 0) return "RELEASE guest.txt failed";
    (void)fs.forget(e.nodeid, 1);
  }
  const int made = fs.mkdir(FUSE_ROOT_ID, "guest-dir", 040755, e);
  out << "testguest: fs mkdir guest-dir errno " << err(made) << "\n";
  if (made == 0) (void)fs.forget(e.nodeid, 1);
  out << "testguest: fs unlink victim.txt errno " << err(fs.unlink(FUSE_ROOT_ID, "victim.txt"))
      << "\n";
  return nullptr;
}

// Until the host creates `go` in the share (the session is live all along).
const char* hold_session(FsDriver& fs) {
  out << "testguest: fs session live\n";
  for (uint32_t i = 0; i < kPollTries; ++i) {
    fuse_entry_out e;
    if (fs.lookup(FUSE_ROOT_ID, "go", e) == 0) {
      const int d = fs.destroy();
      out << "testguest: fs session ended (DESTROY errno " << err(d) << ")\n";
      cpl0_halt_forever();
    }
    spin(kPollCycles);
  }
  return "the host never created `go`";
}

int init_session(FsDriver& fs, bool wait_bound) {
  int e = fs.fuse_init();
  if (!wait_bound || e != -107) return e;  // ENOTCONN: unbound (vmm/devices/fs/virtio_fs.h)
  out << "testguest: fs unbound (INIT errno 107), waiting for a share\n";
  for (uint32_t i = 0; i < kPollTries && e == -107; ++i) {
    spin(kPollCycles);
    e = fs.fuse_init();
  }
  return e;
}

}  // namespace

ScenarioResult run_fs(const BootInfo& boot) {
  DeviceList list;
  const DeviceInfo* info;
  if (const char* e = start_virtio_device(boot, list, kTypeFs, info)) return e;
  static FsDriver fs;
  if (const char* e = fs.init(*info)) return e;
  const bool wait_bound = cmdline_has_word(boot.cmdline, "testguest.fs.wait-bound");
  const int init = init_session(fs, wait_bound);
  if (init != 0) {
    out << "testguest: fs INIT errno " << err(init) << "\n";
    return "FUSE_INIT failed";
  }
  out << "testguest: fs tag " << fs.tag() << " minor " << dec(fs.minor) << " max_write "
      << dec(fs.max_write) << "\n";
  if (const char* e = read_hello(fs)) return e;
  if (cmdline_has_word(boot.cmdline, "testguest.fs.hold")) return hold_session(fs);
  if (const char* e = try_escapes(fs)) return e;
  if (const char* e = change_things(fs)) return e;
  Names names;
  if (const char* e = list_root(fs, names)) return e;
  out << "testguest: fs readdir:";
  for (int i = 0; i < names.count; ++i)
    out << " " << names.name[i];
  out << "\n";
  const int d = fs.destroy();
  out << "testguest: fs destroy errno " << err(d) << "\n";
  if (d != 0) return "DESTROY failed";
  return nullptr;
}

}  // namespace testguest
