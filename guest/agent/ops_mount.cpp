// mount, umount: a workspace share of the host (a virtio-fs device, virtio 1.2 §5.11) mounted where
// the host says, after post_restore. The host's file server enforces the share's mode whatever the
// guest does; the guest's own `ro` flag only makes a read-only share fail early and clearly.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/agent/errors.h"
#include "common/agent/wire.h"
#include "guest/agent/ops.h"

namespace carapace::agent {
namespace {

// virtio 1.2 §5.11.4: the tag is at most 36 bytes. Ours are plain names; nothing else is needed
// and nothing else is let near mount(2).
bool valid_tag(std::string_view tag) {
  if (tag.empty() || tag.size() > 36) return false;
  for (char c : tag)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
      return false;
  return true;
}

Result<bool> parse_read_only(const json& body) {
  auto mode = TRY(opt_string(body, "mode"));
  if (!mode || *mode == "ro") return true;
  if (*mode == "rw" || *mode == "rw-nodelete") return false;
  return protocol_error(code::kBadRequest, "\"mode\" must be \"ro\", \"rw\" or \"rw-nodelete\"");
}

}  // namespace

Status op_mount(AgentContext& ctx, ConnectionState&, const Request& req) {
  // Everything is checked before anything is changed.
  std::string tag = TRY(req_string(req.body, "tag"));
  std::string path = TRY(req_string(req.body, "path"));
  const bool read_only = TRY(parse_read_only(req.body));
  if (!valid_tag(tag))
    return protocol_error(code::kBadRequest, "\"tag\" must be 1..36 of [A-Za-z0-9._-]");
  std::string rel = TRY(ctx.root.relative(path));
  if (rel == ".")
    return protocol_error(code::kPathRefused, "the sandbox root itself cannot be a mount point");
  if (!ctx.system_mode)
    return protocol_error(code::kPermissionDenied,
                          "mount: only the guest's PID 1 mounts shares (this agent is not)");

  // The mount point is made beneath the root one confined step at a time (symlinks refused),
  // and the mount goes onto the directory that descriptor holds, through its /proc link, so a
  // name swapped meanwhile cannot move it.
  std::string leaf;
  UniqueFd parent = TRY(ctx.root.open_parent(path, /*parents=*/true, &leaf));
  if (::mkdirat(parent.get(), leaf.c_str(), 0755) < 0 && errno != EEXIST)
    return sys_error("mkdir '" + path + "'");
  UniqueFd point = TRY(open_beneath(parent.get(), leaf, O_PATH | O_DIRECTORY));
  const std::string target = "/proc/self/fd/" + std::to_string(point.get());
  unsigned long flags = MS_NOSUID | MS_NODEV | (read_only ? MS_RDONLY : 0);
  if (::mount(tag.c_str(), target.c_str(), "virtiofs", flags, nullptr) < 0) {
    const int err = errno;
    // ENODEV here is either no virtiofs in this kernel or no device with this tag.
    return protocol_error(code::kIoError,
                          "mount of share '" + tag + "' on " + path + ": " + std::strerror(err));
  }
  TRY_STATUS(ctx.root.add_mount(path));
  return req.out.send({{"ok", true}, {"tag", tag}, {"path", path}, {"read_only", read_only}});
}

}  // namespace carapace::agent

namespace carapace::agent {

// Before the VM is snapshotted (a fork), its shares must be unmounted: the FUSE session names
// host files the snapshot cannot carry. A share still in use (a process's cwd or open file) is
// busy and stays mounted; nothing is forced.
Status op_umount(AgentContext& ctx, ConnectionState&, const Request& req) {
  std::string path = TRY(req_string(req.body, "path"));
  std::string rel = TRY(ctx.root.relative(path));
  if (!ctx.system_mode)
    return protocol_error(code::kPermissionDenied,
                          "umount: only the guest's PID 1 unmounts shares (this agent is not)");
  const std::string abs = ctx.root.path() + "/" + rel;
  if (!ctx.root.remove_mount(path))
    return protocol_error(code::kNotFound, "no share is mounted at " + path);
  if (::umount2(abs.c_str(), UMOUNT_NOFOLLOW) < 0) {
    const int err = errno;
    (void)ctx.root.add_mount(path);  // still mounted: keep serving requests beneath it
    return protocol_error(err == EBUSY ? code::kInUse : code::kIoError,
                          "umount " + path + ": " + std::strerror(err));
  }
  return req.out.send({{"ok", true}, {"path", path}});
}

}  // namespace carapace::agent
