// Parsing of the device flags of `carapace run`: `--drive`, `--net`, `--vsock`, `--rng`, `--fs`.
// Each takes a comma-separated key=value list; every refusal names the flag, the key and why. Pure,
// so every bad input is unit tested.
#pragma once

#include <functional>

#include <string>

#include "common/base/result.h"
#include "vmm/machine/device_config.h"

namespace carapace {

// path=FILE[,ro=on|off][,overlay=FILE][,serial=ID][,bps=N][,iops=N]
Result<BlockDeviceConfig> parse_drive_arg(const std::string& spec);
// tap=NAME|unix=PATH[,mac=xx:xx:xx:xx:xx:xx][,allow=CIDR:PROTO:PORT]...[,policy=deny]
//   [,rx_bps=N][,tx_bps=N][,rx_pps=N][,tx_pps=N]
// Any allow= (or policy=deny) turns the egress policy on: everything else but ARP is dropped.
Result<NetDeviceConfig> parse_net_arg(const std::string& spec);
// cid=N,uds=PATH
Result<VsockDeviceConfig> parse_vsock_arg(const std::string& spec);
// tag=T[,path=DIR][,mode=ro|rw|rw-nodelete]: a virtio-fs share (mode ro by default); without
// path= the device is unbound until `PUT /fs/{tag}` on the control API binds a folder. Whether
// DIR opens as a directory is checked when the device is made (VirtioFs::create), not here.
Result<FsDeviceConfig> parse_fs_arg(const std::string& spec);

// The device flags `run` and `restore` share (--drive, --net, --vsock, --rng, --fs): if `flag` is
// one, parses it into `devices` (taking its value from `value()` when it has one) and returns true.
Result<bool> parse_device_flag(const std::string& flag,
                               const std::function<Result<std::string>()>& value,
                               DeviceConfigs& devices);

// --no-seccomp is for debugging: refused unless CARAPACE_ALLOW_NO_SECCOMP=1.
Status check_no_seccomp_allowed();
// CIDR:PROTO:PORT, e.g. 10.0.0.0/8:tcp:443, 2001:db8::/32:udp:53, 0.0.0.0/0:icmp:any
Result<EgressRule> parse_egress_rule(const std::string& text);

}  // namespace carapace
