#include "vmm/cli/restore_args.h"

#include <cctype>
#include <cstdlib>

#include "vmm/cli/device_args.h"
#include "vmm/cli/run_args.h"

namespace carapace {

const char kRestoreUsage[] =
    "usage: carapace restore --snapshot DIR [options]\n"
    "  Restores a snapshot taken with `carapace run --api-sock` (PUT /snapshot/create) and runs\n"
    "  it; RAM is mapped copy-on-write from the snapshot, so clones share every clean page.\n"
    "  --snapshot DIR             the snapshot directory (required)\n"
    "  --clones N                 run N clones concurrently in this process (default 1)\n"
    "  --console stdio|file:PATH|none   default stdio; with N > 1 each clone's lines on stdout\n"
    "                             are prefixed \"[clone I] \", and file:PATH writes PATH.<I>\n"
    "  --drive, --net, --vsock, --rng, --fs   the snapshot's devices, as for `carapace run`\n"
    "                             (--fs in the snapshot's order, each with its tag; a folder may\n"
    "                             be given here, or bound later with PUT /fs/TAG)\n"
    "  --timeout SEC              stop each clone after SEC seconds (exit status 5)\n"
    "  --teardown deferred|sync   exit before (default) or after KVM has destroyed the VMs\n"
    "  --log-level error|warn|info|debug\n"
    "  --api-sock PATH            serve the control API (as carapace run); clone I: PATH.<I>\n"
    "  --agent-token HEX          the snapshot's sandbox token: each clone's guest agent then "
    "gets\n"
    "                             a restore notice (post_restore over vsock port 52: wall clock,\n"
    "                             fresh entropy, a new random token); a clone whose agent does\n"
    "                             not take it within --agent-timeout is stopped. Needs --vsock.\n"
    "  --agent-timeout SEC        how long each clone's agent may take to answer the restore\n"
    "                             notice (default 10)\n"
    "  --agent-token-out PATH     write clone I's new token to PATH.<I> (PATH for one clone),\n"
    "                             mode 0600; needs --agent-token\n"
    "  --paused                   restore with the vCPUs stopped: the guest runs only after\n"
    "                             PUT /vm/resume on --api-sock (required); no --agent-token\n"
    "  --no-seccomp               as for carapace run (needs CARAPACE_ALLOW_NO_SECCOMP=1)\n"
    "clone identities (N > 1; clone I counts from 0; docs/security.md #25):\n"
    "  --vsock cid=C,uds=P        clone I gets CID C+I and socket P.<I>\n"
    "  --net unix=P | tap=T       clone I gets P.<I> | T.<I>; mac=M becomes M+I (low 24 bits),\n"
    "                             without mac= each clone gets a fresh random MAC\n"
    "  --drive ...,overlay=F      clone I writes F.<I>; a writable --drive without overlay= is\n"
    "                             refused (clones would corrupt each other's disk)\n"
    "  --fs ...,path=DIR          shared by every clone, so mode=ro only (or unbound: bind each\n"
    "                             clone's folder with PUT /fs/TAG on PATH.<I>)\n"
    "exit status: the worst clone's (see carapace run --help); 2 for a bad, corrupt or\n"
    "             incompatible snapshot (one line on stderr, no VM started)\n";

namespace {

bool is_token(const std::string& t) {
  if (t.empty() || t.size() > 128) return false;
  for (char c : t)
    if (!isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Collisions between clones are impossible after these checks.
Status check_clone_identities(const RestoreArgs& a) {
  if (a.clones <= 1) return {};
  const DeviceConfigs& d = a.machine.devices;
  if (d.vsock && uint64_t{d.vsock->guest_cid} + a.clones - 1 >= 0xffffffffu)
    return flag_error("--vsock cid: " + std::to_string(d.vsock->guest_cid) + " + " +
                      std::to_string(a.clones) + " clones runs past 4294967294");
  for (const auto& n : d.nets) {
    if (n.backend == NetDeviceConfig::Backend::kTap &&
        n.tap_name.size() + 1 + std::to_string(a.clones - 1).size() > 15)
      return flag_error("--net tap: '" + n.tap_name + ".<clone>' would pass 15 bytes");
    if (n.mac_set && mac_low24(n.mac) + (a.clones - 1) > 0xffffff)
      return flag_error("--net mac: adding the clone number would overflow its low 24 bits");
  }
  for (const auto& drive : d.drives)
    if (!drive.read_only && drive.overlay_path.empty())
      return flag_error("--drive " + drive.path +
                        ": clones cannot share a writable disk; use ro=on " +
                        "or overlay=FILE (each clone writes FILE.<clone>)");
  // Clones that write one folder would see each other's files.
  for (const auto& fs : d.filesystems)
    if (!fs.shared_dir.empty() && fs.mode != FsMode::kReadOnly)
      return flag_error("--fs " + fs.tag + ": clones cannot share a writable folder; use " +
                        "mode=ro, or no path= and bind each clone's own with PUT /fs/" + fs.tag);
  return {};
}

}  // namespace

Result<RestoreArgs> parse_restore_args(const std::vector<std::string>& args) {
  RestoreArgs out;
  MachineConfig& m = out.machine;
  TRY_STATUS(
      for_each_flag(args, [&m, &out](const std::string& flag, const FlagValue& value) -> Status {
        if (flag == "--snapshot") {
          out.snapshot_dir = TRY(value());
          if (out.snapshot_dir.empty()) return flag_error("--snapshot: empty path");
        } else if (flag == "--clones") {
          uint64_t n = TRY(parse_u64(flag, TRY(value())));
          if (n == 0 || n > kMaxClones)
            return flag_error("--clones: expected 1 to " + std::to_string(kMaxClones) + ", got " +
                              std::to_string(n));
          out.clones = static_cast<uint32_t>(n);
        } else if (flag == "--console") {
          TRY_STATUS(parse_console_arg(TRY(value()), m.console));
        } else if (TRY(parse_device_flag(flag, value, m.devices))) {
          // --drive, --net, --vsock, --rng, --fs
        } else if (flag == "--timeout") {
          m.timeout_seconds = TRY(parse_seconds(flag, TRY(value())));
        } else if (flag == "--teardown") {
          out.deferred_teardown = TRY(parse_teardown(TRY(value())));
        } else if (flag == "--log-level") {
          out.log_level = TRY(parse_log_level(TRY(value())));
        } else if (flag == "--api-sock") {
          out.api_sock = TRY(value());
          if (out.api_sock.empty()) return flag_error("--api-sock: empty path");
        } else if (flag == "--agent-token") {
          out.agent_token = TRY(value());
          if (!is_token(out.agent_token))
            return flag_error("--agent-token: expected 1 to 128 hex digits");
        } else if (flag == "--agent-token-out") {
          out.agent_token_out = TRY(value());
          if (out.agent_token_out.empty()) return flag_error("--agent-token-out: empty path");
        } else if (flag == "--agent-timeout") {
          out.agent_timeout_s = TRY(parse_seconds(flag, TRY(value())));
        } else if (flag == "--paused") {
          out.start_paused = true;
        } else if (flag == "--no-seccomp") {
          TRY_STATUS(check_no_seccomp_allowed());
          out.seccomp = false;
        } else {
          return flag_error("unknown option '" + flag + "' (see carapace restore --help)");
        }
        return {};
      }));
  if (out.snapshot_dir.empty()) return flag_error("--snapshot DIR is required");
  if (!out.agent_token.empty() && !m.devices.vsock)
    return flag_error("--agent-token: the restore notice goes over vsock; add --vsock");
  if (!out.agent_token_out.empty() && out.agent_token.empty())
    return flag_error("--agent-token-out needs --agent-token");
  if (out.start_paused && out.api_sock.empty())
    return flag_error("--paused: nothing could resume the VM; add --api-sock");
  if (out.start_paused && !out.agent_token.empty())
    return flag_error(
        "--paused: the restore notice needs a running guest; drop --agent-token and send "
        "post_restore after PUT /vm/resume");
  TRY_STATUS(check_clone_identities(out));
  return out;
}

MachineConfig clone_config(const RestoreArgs& args, uint32_t i) {
  if (args.clones <= 1) return args.machine;
  return clone_identity(args.machine, i);
}

}  // namespace carapace
