#include "daemon/backends/microvm_args.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/random.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

#include <cctype>

#include "common/base/unique_fd.h"

namespace carapace::service {

namespace {
// "_4294967295" after the vsock socket's name: the longest suffix the VMM adds.
constexpr size_t kLongestSuffix = 11;
constexpr size_t kLongestName = 24;  // "i4294967295/vsock" and a margin
}  // namespace

VmPaths vm_paths(const std::string& dir, const std::string& name) {
  const std::string base = dir + "/" + name;
  return VmPaths{base,          base + "/api",     base + "/vsock", base + "/console",
                 base + "/log", base + "/snapshot"};
}

Status check_dir_fits_sockets(const std::string& dir) {
  if (dir.size() + 1 + kLongestName + kLongestSuffix >= sizeof(sockaddr_un::sun_path))
    return as_invalid_input(make_error(
        "microvm: state folder " + dir + " is too long for Unix socket paths (keep it under " +
        std::to_string(sizeof(sockaddr_un::sun_path) - 1 - kLongestName - kLongestSuffix) +
        " bytes)"));
  return {};
}

bool on_memory_filesystem(const std::string& dir) {
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) != 0) return false;
  return fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC;
}

VmJail vm_jail(const TemplateSpec& spec, const std::string& template_dir, const std::string& tag,
               const std::string& name, const VmPaths& paths,
               const std::vector<std::string>& read_only, uid_t uid, bool snapshots_in_memory) {
  VmJail j;
  j.id = "vm-" + tag + "-" + name;
  for (char& c : j.id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '-';
  j.id = j.id.substr(0, 64);
  j.chroot_base = template_dir + "/jails";
  j.uid = uid;
  j.mem_limit_mib = spec.mem_mib + kVmmMemOverheadMib + (snapshots_in_memory ? spec.mem_mib : 0);
  // Threads: main, event loop, console, one per vCPU, io_uring workers; a margin for the rest.
  j.pids_max = 64 + 2 * uint64_t{spec.vcpus};
  // Its vCPUs and one more CPU for device I/O.
  j.cpu_quota_pct = (spec.vcpus + 1) * 100;
  // The largest file it writes is a snapshot's memory file: the guest's RAM.
  j.fsize_mib = spec.mem_mib + 64;
  j.nofile = kVmOpenFiles;
  for (const auto& f : read_only)
    if (!f.empty()) j.binds.push_back(f + ":ro");
  j.binds.push_back(paths.dir);
  return j;
}

std::vector<std::string> jailed_argv(const VmJail& jail, const std::string& carapace_exe,
                                     const std::vector<std::string>& vmm_argv) {
  const std::string ids = std::to_string(jail.uid);
  std::vector<std::string> argv{carapace_exe,    "jail",
                                "--id",          jail.id,
                                "--exec-file",   carapace_exe,
                                "--uid",         ids,
                                "--gid",         ids,
                                "--chroot-base", jail.chroot_base,
                                "--netns",       "new",
                                "--proc",        "pids",
                                "--mem-limit",   std::to_string(jail.mem_limit_mib),
                                "--pids-max",    std::to_string(jail.pids_max),
                                "--cpu-quota",   std::to_string(jail.cpu_quota_pct),
                                "--fsize-mib",   std::to_string(jail.fsize_mib),
                                "--nofile",      std::to_string(jail.nofile ? jail.nofile : 4096)};
  for (const auto& b : jail.binds)
    argv.insert(argv.end(), {"--bind", b});
  argv.push_back("--");
  argv.insert(argv.end(), vmm_argv.begin() + (vmm_argv.empty() ? 0 : 1), vmm_argv.end());
  return argv;
}

uid_t next_vm_uid() {
  // Each daemon starts at its own offset, so two daemons on one host rarely share a uid.
  static std::atomic<uint32_t> next{static_cast<uint32_t>(::getpid()) * 7919u};
  return kVmUidBase + next.fetch_add(1) % kVmUidSpan;
}

uint32_t CidAllocator::next() {
  // 0-2 are the hypervisor, loopback and host; 0xffffffff is VMADDR_CID_ANY.
  uint32_t cid = next_.load(std::memory_order_relaxed);
  for (;;) {
    const uint32_t mine = cid < 3 || cid == 0xffffffffu ? 3 : cid;
    const uint32_t after = mine >= 0xfffffffeu ? 3 : mine + 1;
    if (next_.compare_exchange_weak(cid, after, std::memory_order_relaxed)) return mine;
  }
}

namespace {

void add_common(std::vector<std::string>& argv, const VmPaths& paths, uint32_t cid, bool seccomp) {
  if (!seccomp) argv.push_back("--no-seccomp");
  // The share devices, unbound, after every other device (the VMM puts them last, so a snapshot
  // of a template keeps the slots of its other devices).
  for (size_t i = 0; i < kShareSlots; ++i)
    argv.insert(argv.end(), {"--fs", "tag=" + share_tag(i)});
  argv.insert(argv.end(), {"--vsock", "cid=" + std::to_string(cid) + ",uds=" + paths.vsock_uds,
                           "--api-sock", paths.api_sock, "--console",
                           "file:" + paths.console + ",max=" + std::to_string(kConsoleMaxBytes)});
}

}  // namespace

std::string share_tag(size_t slot) {
  return "carapace" + std::to_string(slot);
}

std::vector<std::string> boot_argv(const TemplateSpec& spec, const std::string& carapace_exe,
                                   const VmPaths& paths, uint32_t cid, const std::string& token,
                                   bool seccomp) {
  std::vector<std::string> argv{carapace_exe, "run", "--kernel", spec.kernel};
  if (!spec.initrd.empty()) argv.insert(argv.end(), {"--initrd", spec.initrd});
  if (!spec.rootfs.empty()) argv.insert(argv.end(), {"--drive", "path=" + spec.rootfs + ",ro=on"});
  argv.insert(argv.end(),
              {"--vcpus", std::to_string(spec.vcpus), "--mem", std::to_string(spec.mem_mib)});
  add_common(argv, paths, cid, seccomp);
  std::string cmdline = spec.boot_args;
  if (!cmdline.empty()) cmdline += " ";
  cmdline += "carapace.token=" + token;
  argv.insert(argv.end(), {"--cmdline", cmdline});
  return argv;
}

std::vector<std::string> restore_argv(const TemplateSpec& spec, const std::string& carapace_exe,
                                      const std::string& snapshot_dir, const VmPaths& paths,
                                      uint32_t cid, bool seccomp) {
  std::vector<std::string> argv{carapace_exe, "restore", "--snapshot", snapshot_dir, "--paused"};
  // The snapshot's devices, in the same order as at boot: the same read-only root drive.
  if (!spec.rootfs.empty()) argv.insert(argv.end(), {"--drive", "path=" + spec.rootfs + ",ro=on"});
  add_common(argv, paths, cid, seccomp);
  return argv;
}

Result<std::string> random_bytes(size_t bytes) {
  std::string out(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::getrandom(out.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("getrandom");
    got += static_cast<size_t>(n);
  }
  return out;
}

Result<std::string> random_hex(size_t bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string raw = TRY(random_bytes(bytes));
  std::string out;
  out.reserve(bytes * 2);
  for (unsigned char c : raw) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

std::string file_tail(const std::string& path, size_t max) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return "(none)";
  off_t size = ::lseek(fd.get(), 0, SEEK_END);
  if (size <= 0) return "(empty)";
  off_t from = size > static_cast<off_t>(max) ? size - static_cast<off_t>(max) : 0;
  std::string buf(static_cast<size_t>(size - from), '\0');
  ssize_t n = ::pread(fd.get(), buf.data(), buf.size(), from);
  if (n <= 0) return "(unreadable)";
  buf.resize(static_cast<size_t>(n));
  for (char& c : buf)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  size_t first = buf.find_first_not_of(' ');
  size_t last = buf.find_last_not_of(' ');
  return first == std::string::npos ? "(blank)" : buf.substr(first, last - first + 1);
}

}  // namespace carapace::service
