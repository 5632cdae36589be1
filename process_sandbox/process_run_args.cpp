#include "process_sandbox/process_run_args.h"

#include <optional>

#include "common/base/flag_values.h"

namespace carapace {

const char kProcessRunUsage[] =
    "usage: carapace run --isolation process --rootfs IMG --agent-sock PATH [options]\n"
    "Runs the guest agent itself, not a VM, in a jail on the host kernel: the ext4 image\n"
    "mounted read-only under a tmpfs overlay, new user (uid 1000 inside = an unprivileged host\n"
    "uid), PID, mount, IPC, UTS and network (loopback only) namespaces, a seccomp filter on the\n"
    "agent and its workload (no ptrace, mount, namespaces, bpf, io_uring, perf, keyrings, ...),\n"
    "cgroup limits. WEAKER THAN A MICROVM: the workload shares the host kernel and reaches it\n"
    "through every system call the filter allows; use it as one layer of defence in depth only\n"
    "(jailer/README.md). Needs root.\n"
    "  --rootfs IMG          the guest image (ext4), e.g. build/guest/rootfs.ext4\n"
    "  --agent-sock PATH     host path made a symlink to the agent's Unix socket (must not exist)\n"
    "  --id ID               1-64 of [A-Za-z0-9-] (default: sandbox-<pid>); names the jail folder\n"
    "                        <chroot-base>/ID and the cgroups <hierarchy>/carapace/process-ID\n"
    "  --token-file FILE     the agent's token (hex, mode 0600); passed to the agent through a\n"
    "                        pipe, never on a command line. Without it the agent answers ping "
    "only\n"
    "  --mem-limit MIB       memory cgroup limit (swap 0); the kernel OOM-kills inside only\n"
    "  --pids-max N          pids cgroup limit\n"
    "  --cpu-quota PCT       CPU quota (100 = one CPU)\n"
    "  --tmp-size MIB        size of the writable root overlay and of /tmp (default 256)\n"
    "  --uid N, --gid N      the sandbox's host ids (default: derived from the id, 200000-259999)\n"
    "  --agent PATH          a static agent bound over the image's /usr/sbin/carapace-agent\n"
    "  --chroot-base DIR     where jail folders go (default /srv/carapace-process)\n"
    "  --cgroup-version auto|1|2\n"
    "  --mount host=PATH,guest=PATH[,mode=ro|rw|rw-nodelete]\n"
    "                        share a host folder at PATH inside (repeatable, at most 8; mode\n"
    "                        ro by default): an idmapped bind mount (the folder's owner is the\n"
    "                        sandbox's user inside it), nosuid, nodev, read-only for ro;\n"
    "                        rw-nodelete adds Landlock: nothing in it can be removed, renamed or\n"
    "                        truncated (docs/api.md, Mounts). HOST is opened as given\n"
    "  --allow-egress RULE   not supported by the process backend yet (refused): its network\n"
    "                        namespace has only loopback\n"
    "exit status: the agent's (128+N for signal N), 1 host error, 2 bad input\n";

namespace {

Result<uint64_t> parse_u64(const std::string& flag, const std::string& v, uint64_t min,
                           uint64_t max) {
  const std::optional<uint64_t> n = decimal_u64(v);
  if (!n || *n < min || *n > max)
    return flag_error(flag + ": expected a number in " + std::to_string(min) + ".." +
                      std::to_string(max) + ", got '" + v + "'");
  return *n;
}

}  // namespace

Result<RunIsolation> take_isolation_flag(std::vector<std::string>& args) {
  RunIsolation iso = RunIsolation::kMicrovm;
  for (size_t i = 0; i < args.size();) {
    if (args[i] != "--isolation") {
      ++i;
      continue;
    }
    if (i + 1 >= args.size()) return flag_error("--isolation: expected microvm or process");
    iso = TRY(parse_choice<RunIsolation>(
        "--isolation", args[i + 1],
        {{"microvm", RunIsolation::kMicrovm}, {"process", RunIsolation::kProcess}}));
    args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
  }
  return iso;
}

Result<ProcessRunArgs> parse_process_run_args(const std::vector<std::string>& args) {
  ProcessRunArgs out;
  ProcessSandboxConfig& c = out.cfg;
  TRY_STATUS(for_each_flag_pair(
      args, out.help, [&c](const std::string& a, const std::string& v) -> Status {
        if (a == "--rootfs") {
          c.rootfs = TRY(normalise_abs_path(a, v));
        } else if (a == "--agent-sock") {
          c.agent_sock = TRY(normalise_abs_path(a, v));
        } else if (a == "--id") {
          TRY_STATUS(check_jail_id(v));
          c.id = v;
        } else if (a == "--token-file") {
          c.token_file = TRY(normalise_abs_path(a, v));
        } else if (a == "--agent") {
          c.agent_exe = TRY(normalise_abs_path(a, v));
        } else if (a == "--chroot-base") {
          c.chroot_base = TRY(normalise_abs_path(a, v));
          if (c.chroot_base == "/") return flag_error("--chroot-base: not /");
        } else if (a == "--mem-limit") {
          c.mem_limit_mib = TRY(parse_u64(a, v, 16, uint64_t{1} << 30));
        } else if (a == "--pids-max") {
          c.pids_max = TRY(parse_u64(a, v, 8, 1u << 22));
        } else if (a == "--cpu-quota") {
          c.cpu_quota_pct = static_cast<uint32_t>(TRY(parse_u64(a, v, 1, 100000)));
        } else if (a == "--tmp-size") {
          c.tmp_mib = TRY(parse_u64(a, v, 1, uint64_t{1} << 20));
        } else if (a == "--uid") {
          c.uid = static_cast<uid_t>(TRY(parse_u64(a, v, 1, 0xfffffffeu)));
        } else if (a == "--gid") {
          c.gid = static_cast<gid_t>(TRY(parse_u64(a, v, 1, 0xfffffffeu)));
        } else if (a == "--cgroup-version") {
          if (v == "auto")
            c.cgroup_version = CgroupVersion::kAuto;
          else if (v == "1")
            c.cgroup_version = CgroupVersion::kV1;
          else if (v == "2")
            c.cgroup_version = CgroupVersion::kV2;
          else
            return flag_error("--cgroup-version: expected auto, 1 or 2");
        } else if (a == "--allow-egress") {
          c.allow_egress.push_back(v);
        } else if (a == "--mount") {
          c.shares.push_back(TRY(parse_share_flag(a, v)));
        } else {
          return flag_error("unknown flag '" + a + "' for --isolation process");
        }
        return {};
      }));
  if (out.help) return out;
  if (c.rootfs.empty()) return flag_error("--rootfs is required with --isolation process");
  if (c.agent_sock.empty()) return flag_error("--agent-sock is required with --isolation process");
  if (c.gid != 0 && c.uid == 0) return flag_error("--gid needs --uid");
  if (Status s = check_share_list(c.shares, "--mount"); !s.ok())
    return flag_error(s.error().message);
  return out;
}

}  // namespace carapace
