#include "vmm/cli/run_args.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "vmm/cli/device_args.h"

namespace carapace {

const char kRunUsage[] =
    "usage: carapace run --kernel PATH [options]\n"
    "       carapace run --isolation process --rootfs IMG --agent-sock PATH [options]\n"
    "  --isolation microvm|process   microvm (default): this VMM. process: the guest agent\n"
    "                             itself in a jail on the host kernel (namespaces, seccomp,\n"
    "                             cgroups) -- WEAKER than a microVM: the workload shares the\n"
    "                             host kernel. `carapace run --isolation process --help`\n"
    "  --kernel PATH              ELF kernel (Linux vmlinux or the test guest)\n"
    "  --initrd PATH              initramfs to load below the top of low RAM\n"
    "  --cmdline STR              kernel command line\n"
    "  --mem MiB                  guest RAM in MiB (default 128, minimum 16)\n"
    "  --hugepages                back guest RAM with transparent huge pages (fewer faults)\n"
    "  --vcpus N                  number of vCPUs (default 1)\n"
    "  --cpu-template NAME        host (default) or baseline\n"
    "  --boot elf|pvh             Linux 64-bit entry (default) or the PVH note's 32-bit entry\n"
    "  --console stdio|file:PATH[,max=BYTES]|none   where the serial console goes (default\n"
    "                             stdio); max= caps the file, the rest is dropped and counted\n"
    "  --console-input            feed stdin to the serial console\n"
    "  --drive path=FILE[,ro=on|off][,overlay=FILE][,serial=ID][,bps=N][,iops=N]   (repeatable)\n"
    "                             virtio-blk disk; overlay= keeps FILE read-only and writes there\n"
    "  --net tap=NAME|unix=PATH[,mac=MAC][,allow=CIDR:PROTO:PORT]...[,rx_bps=N][,tx_bps=N]\n"
    "                             virtio-net (repeatable); any allow= denies all other egress\n"
    "  --vsock cid=N,uds=PATH     virtio-vsock; host connects to PATH and writes CONNECT <port>\n"
    "  --rng                      virtio-rng (entropy from getrandom)\n"
    "  --fs tag=T[,path=DIR][,mode=ro|rw|rw-nodelete]   (repeatable)\n"
    "                             virtio-fs: DIR shared with the guest, which mounts it by tag T\n"
    "                             (mount -t virtiofs T /mnt); mode enforced on the host, ro by\n"
    "                             default; without path= unbound until PUT /fs/T binds a folder\n"
    "  --timeout SEC              stop the VM after SEC seconds (exit status 5)\n"
    "  --teardown deferred|sync   exit before (default) or after KVM has destroyed the VM\n"
    "  --no-seccomp               run without the per-thread seccomp filters (debugging only;\n"
    "                             needs CARAPACE_ALLOW_NO_SECCOMP=1)\n"
    "  --api-sock PATH            serve the control API (HTTP/JSON) on this Unix socket while\n"
    "                             the VM runs: GET /vm, PUT /vm/pause, PUT /vm/resume,\n"
    "                             PUT /snapshot/create {\"dir\": DIR, \"resume\": BOOL},\n"
    "                             GET /fs, PUT /fs/TAG {\"path\": DIR, \"mode\": MODE}\n"
    "  --log-level error|warn|info|debug\n"
    "exit status: 0 guest reset/poweroff, 1 host error, 2 bad input, 3 triple fault,\n"
    "             4 KVM internal/emulation error, 5 timeout, 6 guest panic (the guest wrote\n"
    "             bit 0 to the pvpanic port 0x505, or KVM reported a guest crash)\n";

Status parse_console_arg(const std::string& v, ConsoleConfig& console) {
  if (v == "stdio") {
    console.kind = ConsoleKind::kStdio;
  } else if (v == "none") {
    console.kind = ConsoleKind::kNone;
  } else if (v.rfind("file:", 0) == 0 && v.size() > 5) {
    console.kind = ConsoleKind::kFile;
    console.path = v.substr(5);
    console.max_bytes = 0;
    // The last ",max=" is the cap (a path may hold commas, never this suffix by accident).
    if (size_t at = console.path.rfind(",max="); at != std::string::npos) {
      const std::string n = console.path.substr(at + 5);
      console.path.resize(at);
      auto max = parse_u64("--console max", n);
      if (!max.ok()) return max.take_error();
      if (*max == 0) return flag_error("--console max: must be at least 1 byte");
      if (console.path.empty()) return flag_error("--console file: empty path");
      console.max_bytes = *max;
    }
  } else {
    return flag_error("--console: expected stdio, file:PATH or none, got '" + v + "'");
  }
  return {};
}

Result<int> parse_log_level(const std::string& v) {
  return parse_choice<int>("--log-level", v,
                           {{"error", 0}, {"warn", 1}, {"info", 2}, {"debug", 3}});
}

Result<bool> parse_teardown(const std::string& v) {
  return parse_choice<bool>("--teardown", v, {{"deferred", true}, {"sync", false}});
}

bool print_help_if_asked(const std::vector<std::string>& args, const char* usage) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      fputs(usage, stdout);
      return true;
    }
  }
  return false;
}

Status for_each_flag(
    const std::vector<std::string>& args,
    const std::function<Status(const std::string& flag, const FlagValue& value)>& on_flag) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    const FlagValue value = [&]() -> Result<std::string> {
      if (i + 1 >= args.size()) return flag_error(flag + ": missing value");
      return args[++i];
    };
    TRY_STATUS(on_flag(flag, value));
  }
  return {};
}

Result<RunArgs> parse_run_args(const std::vector<std::string>& args) {
  RunArgs out;
  MachineConfig& m = out.machine;
  bool have_kernel = false;
  TRY_STATUS(for_each_flag(
      args, [&m, &out, &have_kernel](const std::string& flag, const FlagValue& value) -> Status {
        if (flag == "--kernel") {
          m.kernel_path = TRY(value());
          have_kernel = true;
        } else if (flag == "--initrd") {
          m.initrd_path = TRY(value());
          if (m.initrd_path.empty()) return flag_error("--initrd: empty path");
        } else if (flag == "--cmdline") {
          m.cmdline = TRY(value());
        } else if (flag == "--mem") {
          uint64_t mib = TRY(parse_u64(flag, TRY(value())));
          if (mib < 16)
            return flag_error("--mem: at least 16 MiB is needed, got " + std::to_string(mib));
          if (mib > (1ull << 24))
            return flag_error("--mem: " + std::to_string(mib) + " MiB is too large");
          m.mem_bytes = mib << 20;
        } else if (flag == "--hugepages") {
          m.hugepages = true;
        } else if (flag == "--vcpus") {
          uint64_t n = TRY(parse_u64(flag, TRY(value())));
          if (n == 0) return flag_error("--vcpus: at least 1 vCPU is needed");
          if (n > 4096) return flag_error("--vcpus: " + std::to_string(n) + " is too many");
          m.vcpus = static_cast<uint32_t>(n);
        } else if (flag == "--cpu-template") {
          auto t = parse_cpu_template(TRY(value()));
          if (!t.ok()) return flag_error("--cpu-template: " + t.error().message);
          m.cpu_template = *t;
        } else if (flag == "--boot") {
          m.boot = TRY(parse_choice<BootProtocol>(
              flag, TRY(value()), {{"elf", BootProtocol::kLinux64}, {"pvh", BootProtocol::kPvh}}));
        } else if (flag == "--console") {
          TRY_STATUS(parse_console_arg(TRY(value()), m.console));
        } else if (TRY(parse_device_flag(flag, value, m.devices))) {
          // --drive, --net, --vsock, --rng, --fs
        } else if (flag == "--console-input") {
          m.console.input = true;
        } else if (flag == "--timeout") {
          m.timeout_seconds = TRY(parse_seconds(flag, TRY(value())));
        } else if (flag == "--teardown") {
          out.deferred_teardown = TRY(parse_teardown(TRY(value())));
        } else if (flag == "--no-seccomp") {
          // Debugging only: refused unless the environment says so explicitly.
          TRY_STATUS(check_no_seccomp_allowed());
          out.seccomp = false;
        } else if (flag == "--api-sock") {
          out.api_sock = TRY(value());
          if (out.api_sock.empty()) return flag_error("--api-sock: empty path");
        } else if (flag == "--log-level") {
          out.log_level = TRY(parse_log_level(TRY(value())));
        } else {
          return flag_error("unknown option '" + flag + "' (see carapace run --help)");
        }
        return {};
      }));
  if (!have_kernel || m.kernel_path.empty()) return flag_error("--kernel PATH is required");
  if (m.console.input && m.console.kind == ConsoleKind::kNone)
    return flag_error("--console-input needs a console (stdio or file)");
  return out;
}

}  // namespace carapace
