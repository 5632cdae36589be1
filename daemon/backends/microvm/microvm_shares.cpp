// Workspace mounts of a microVM sandbox (docs/api.md, Mounts): the template's snapshot carries
// kShareSlots unbound virtio-fs devices; at hand-out each mount takes the device of its slot.
//   1. `carapace jail attach` puts the folder the daemon checked (its descriptor, never its path)
//      into the VM's jail at <VM folder>/fs<slot>: a detached, id-mapped mount (the folder
//      owner's files are the VM uid's, what the VM makes is the owner's), nosuid, nodev and
//      read-only in the kernel for `ro` (jailer/jail_attach.h, docs/security.md #68);
//   2. PUT /fs/<tag> binds it to the device; the VMM's file server enforces the mode on every
//      request, whatever the guest does (vmm/devices/fs/README.md, docs/security.md #59);
//   3. the agent mounts the tag at the guest path (common/agent/PROTOCOL.md, mount).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "common/agent/errors.h"
#include "common/agent/wire.h"
#include "daemon/backends/microvm/microvm_instance.h"

namespace carapace::service {

namespace {

// The jailed VMM: the supervisor's one child (the VMM is PID 1 of the jail's PID namespace).
pid_t jailed_child(pid_t supervisor) {
  std::ifstream in("/proc/" + std::to_string(supervisor) + "/task/" + std::to_string(supervisor) +
                   "/children");
  pid_t pid = -1;
  return in >> pid ? pid : -1;
}

}  // namespace

Result<AgentClient> MicrovmInstance::agent_client(std::chrono::milliseconds timeout) {
  auto client = TRY(agent_.connect());
  client.set_io_timeout_ms(static_cast<int>(std::max<int64_t>(100, timeout.count())));
  return client;
}

Status MicrovmInstance::attach_folder(const SandboxMount& m, const std::string& target,
                                      const std::string& carapace_exe,
                                      std::chrono::milliseconds timeout) {
  struct stat owner {};
  if (::fstat(m.dir->get(), &owner) != 0) return sys_error("mount " + m.host_path);
  const pid_t vmm = jailed_child(process_.pid());
  if (vmm <= 0) return make_error("the jailed VMM is not running");
  const std::string ids = std::to_string(owner.st_uid) + ":" + std::to_string(owner.st_gid) + ":" +
                          std::to_string(jail_->uid) + ":" + std::to_string(jail_->uid);
  std::vector<std::string> argv{
      carapace_exe, "jail", "attach",  "--pid", std::to_string(vmm), "--source-fd", "3",
      "--target",   target, "--idmap", ids};
  if (m.mode == MountMode::kRo) argv.push_back("--read-only");
  // Its output goes next to the VM's folder, in the template's (the daemon's own), not inside
  // the folder the VMM can write.
  const std::string log = paths_.dir + ".attach.log";
  auto proc = TRY(VmmProcess::spawn(argv, log, {m.dir->get()}));
  const bool ended = proc.wait_exit(static_cast<int>(timeout.count()));
  // describe_exit() speaks of VMM statuses ("vmm exited with status 0 (guest reset)").
  const std::string how = ended ? proc.describe_exit() : "did not finish in time";
  const std::string ok_prefix = "vmm exited with status 0";
  const bool succeeded = ended && how.compare(0, ok_prefix.size(), ok_prefix) == 0 &&
                         (how.size() == ok_prefix.size() || how[ok_prefix.size()] == ' ');
  const std::string said = file_tail(log);
  ::unlink(log.c_str());
  if (!succeeded)
    return make_error("attaching " + m.host_path + ": carapace jail attach " +
                      (ended ? how.substr(how.find(' ') + 1) : how) + ": " + said);
  return {};
}

Status MicrovmInstance::agent_mount(size_t slot, std::chrono::milliseconds timeout) {
  const SandboxMount& m = mounts_[slot];
  auto client = TRY(agent_client(timeout));
  Status s = client.mount(share_tag(slot), m.guest_path, share_mode_name(m.mode));
  if (!s.ok()) return make_error("mount at " + m.guest_path + ": " + s.error().describe());
  return {};
}

Status MicrovmInstance::bind_mounts(const std::vector<SandboxMount>& mounts,
                                    const std::string& carapace_exe,
                                    std::chrono::milliseconds timeout) {
  if (mounts.empty()) return {};
  if (!jail_)
    return as_invalid_input(make_error(
        "mounts on the microvm back end need jailed VMMs (the daemon's config says jail: false)"));
  if (mounts.size() > kShareSlots)
    return as_invalid_input(
        make_error("at most " + std::to_string(kShareSlots) + " mounts on the microvm back end"));
  if (!mounts_.empty()) return make_error("mounts: this VM has its mounts already");
  for (size_t i = 0; i < mounts.size(); ++i) {
    const SandboxMount& m = mounts[i];
    if (!m.dir || !m.dir->valid()) return make_error("mount " + m.guest_path + ": no folder");
    // The mount point, made by the daemon in the VM's folder; the VMM's uid owns that folder,
    // so attach reaches it without following links.
    const std::string target = paths_.dir + "/fs" + std::to_string(i);
    if (::mkdir(target.c_str(), 0755) != 0 && errno != EEXIST)
      return sys_error("mount point " + target);
    TRY_STATUS(attach_folder(m, target, carapace_exe, timeout));
    nlohmann::json bind{{"path", target}, {"mode", share_mode_name(m.mode)}};
    TRY(control("PUT", "/fs/" + share_tag(i), bind.dump(), "binding " + m.host_path));
    mounts_.push_back(m);
    TRY_STATUS(agent_mount(i, timeout));
  }
  return {};
}

Status MicrovmInstance::unmount_shares(std::chrono::milliseconds timeout) {
  for (size_t i = mounts_.size(); i-- > 0;) {
    auto client = agent_client(timeout);
    Status r = client.ok() ? client->umount(mounts_[i].guest_path) : Status(client.error());
    if (r.ok()) continue;
    Error e = r.take_error();
    // The ones already unmounted come back; the VM is as it was.
    for (size_t j = i + 1; j < mounts_.size(); ++j)
      (void)agent_mount(j, timeout);
    if (agent_error_code(e) == agent::code::kInUse)
      return as_invalid_input(make_error("a process in the sandbox is using " +
                                         mounts_[i].guest_path +
                                         " (its working directory or an open file): a sandbox is "
                                         "forked only with its shares unmounted for a moment"));
    return make_error("unmounting " + mounts_[i].guest_path + ": " + e.describe());
  }
  return {};
}

Status MicrovmInstance::remount_shares(std::chrono::milliseconds timeout) {
  for (size_t i = 0; i < mounts_.size(); ++i)
    TRY_STATUS(agent_mount(i, timeout));
  return {};
}

}  // namespace carapace::service
