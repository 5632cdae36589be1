#include "guest/agent/early_boot.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "guest/agent/console.h"
#include "guest/agent/system_ops.h"

namespace carapace::agent {
namespace {

constexpr char kOverlayBase[] = "/overlay";
constexpr char kNewRoot[] = "/overlay/root";

bool is_mount_point(const std::string& path) {
  struct stat a, b;
  if (::stat(path.c_str(), &a) < 0 || ::stat((path + "/..").c_str(), &b) < 0) return false;
  return a.st_dev != b.st_dev;
}

Status do_mount(const char* source, const std::string& target, const char* type,
                unsigned long flags, const char* data) {
  if (::mount(source, target.c_str(), type, flags, data) < 0)
    return sys_error(std::string("mount ") + (type ? type : source) + " on " + target);
  return {};
}

Status mount_unless_mounted(const char* type, const std::string& target, unsigned long flags,
                            const char* data) {
  if (is_mount_point(target)) return {};
  return do_mount(type, target, type, flags, data);
}

Status make_dir(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) < 0 && errno != EEXIST) return sys_error("mkdir " + path);
  return {};
}

// Steps 2 of early_boot(): the writable root.
Status enter_overlay_root() {
  // pivot_root refuses shared mounts; nothing here should propagate anywhere anyway.
  TRY_STATUS(do_mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr));
  TRY_STATUS(do_mount("tmpfs", kOverlayBase, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"));
  const std::string base = kOverlayBase, root = kNewRoot;
  for (const char* d : {"/upper", "/work", "/root"})
    TRY_STATUS(make_dir(base + d, 0755));
  // Layers do not include submounts: the lower "/" shows the image's own empty /dev, /proc, ...
  TRY_STATUS(do_mount("overlay", root, "overlay", 0,
                      "lowerdir=/,upperdir=/overlay/upper,workdir=/overlay/work"));
  for (const char* d : {"/dev", "/proc", "/sys"})
    TRY_STATUS(do_mount(d, root + d, nullptr, MS_MOVE, nullptr));
  if (::chdir(kNewRoot) < 0) return sys_error("chdir into the new root");
  // pivot_root(".", ".") stacks the old root on the new one; detaching "." then drops it
  // (and the tmpfs holding the layers, which the overlay keeps alive) from view.
  if (::syscall(SYS_pivot_root, ".", ".") < 0) return sys_error("pivot_root");
  if (::umount2(".", MNT_DETACH) < 0) return sys_error("detach the old root");
  if (::chdir("/") < 0) return sys_error("chdir /");
  return {};
}

// Step 3: what programs expect of a running system.
Status finish_root() {
  TRY_STATUS(do_mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"));
  TRY_STATUS(make_dir("/dev/pts", 0755));
  TRY_STATUS(do_mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
                      "gid=5,mode=0620,ptmxmode=0666"));
  TRY_STATUS(make_dir("/dev/shm", 01777));
  TRY_STATUS(do_mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"));
  // devtmpfs has device nodes only; these links come from udev or the init system elsewhere.
  const char* links[][2] = {{"/proc/self/fd", "/dev/fd"},
                            {"/proc/self/fd/0", "/dev/stdin"},
                            {"/proc/self/fd/1", "/dev/stdout"},
                            {"/proc/self/fd/2", "/dev/stderr"}};
  for (auto& l : links)
    if (::symlink(l[0], l[1]) < 0 && errno != EEXIST)
      return sys_error(std::string("symlink ") + l[1]);
  TRY_STATUS(make_dir("/work", 0755));
  if (::chmod("/work", 0755) < 0) return sys_error("chmod /work");
  TRY_STATUS(set_hostname("sandbox"));
  if (Status s = bring_up_loopback(); !s.ok())
    console_line("warning: %s", s.error().describe().c_str());  // networking is optional
  return {};
}

}  // namespace

void ensure_std_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0) continue;
    int n = ::open("/dev/null", O_RDWR);  // lowest free descriptor: this one
    if (n >= 0 && n != fd) {
      ::dup2(n, fd);
      ::close(n);
    }
  }
}

Status early_boot() {
  TRY_STATUS(mount_unless_mounted("devtmpfs", "/dev", MS_NOSUID, "mode=0755"));
  ensure_std_fds();
  console_use_device();
  console_line("early boot");
  TRY_STATUS(mount_unless_mounted("proc", "/proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr));
  TRY_STATUS(mount_unless_mounted("sysfs", "/sys", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr));
  TRY_STATUS(enter_overlay_root());
  TRY_STATUS(finish_root());
  console_line("root file system ready (overlay on tmpfs)");
  return {};
}

}  // namespace carapace::agent
