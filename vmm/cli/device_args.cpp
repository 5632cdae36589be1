#include "vmm/cli/device_args.h"

#include <arpa/inet.h>
#include <sys/un.h>

#include <cstdlib>
#include <utility>
#include <vector>

#include "vmm/cli/run_args.h"

namespace carapace {

namespace {

// "a=1,b=2" → {{a,1},{b,2}}; refuses empty items and items without '='.
Result<std::vector<std::pair<std::string, std::string>>> split_kv(const std::string& flag,
                                                                  const std::string& spec) {
  std::vector<std::pair<std::string, std::string>> out;
  if (spec.empty()) return flag_error(flag + ": empty value");
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string item =
        spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t eq = item.find('=');
    if (item.empty() || eq == std::string::npos || eq == 0)
      return flag_error(flag + ": expected key=value, got '" + item + "'");
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

Result<bool> parse_on_off(const std::string& what, const std::string& v) {
  if (v == "on" || v == "true" || v == "1") return true;
  if (v == "off" || v == "false" || v == "0") return false;
  return flag_error(what + ": expected on or off, got '" + v + "'");
}

Result<std::string> parse_path(const std::string& what, const std::string& v) {
  if (v.empty()) return flag_error(what + ": empty path");
  if (v.find('\0') != std::string::npos) return flag_error(what + ": path contains NUL");
  return v;
}

Result<std::string> parse_socket_path(const std::string& what, const std::string& v) {
  auto p = TRY(parse_path(what, v));
  // Room for the longest suffix the VMM adds ("_4294967295") and the NUL.
  if (p.size() + 12 > sizeof(sockaddr_un{}.sun_path))
    return flag_error(what + ": socket path longer than " +
                      std::to_string(sizeof(sockaddr_un{}.sun_path) - 12) + " bytes");
  return p;
}

Result<std::array<uint8_t, 6>> parse_mac(const std::string& v) {
  std::array<uint8_t, 6> mac{};
  if (v.size() != 17) return flag_error("--net mac: expected xx:xx:xx:xx:xx:xx, got '" + v + "'");
  for (int i = 0; i < 6; ++i) {
    if (i < 5 && v[i * 3 + 2] != ':')
      return flag_error("--net mac: expected ':' separators in '" + v + "'");
    char hex[3] = {v[i * 3], v[i * 3 + 1], 0};
    char* end = nullptr;
    long b = std::strtol(hex, &end, 16);
    if (*end != '\0' || !isxdigit(static_cast<unsigned char>(hex[0])) ||
        !isxdigit(static_cast<unsigned char>(hex[1])))
      return flag_error("--net mac: bad hex byte in '" + v + "'");
    mac[i] = static_cast<uint8_t>(b);
  }
  if (mac[0] & 1) return flag_error("--net mac: '" + v + "' is a multicast address");
  if (mac == std::array<uint8_t, 6>{}) return flag_error("--net mac: all-zero address");
  return mac;
}

}  // namespace

Result<EgressRule> parse_egress_rule(const std::string& text) {
  const std::string what = "--net allow=" + text;
  // From the right: IPv6 addresses contain colons, the port and protocol never do.
  size_t c2 = text.rfind(':');
  if (c2 == std::string::npos || c2 == 0) return flag_error(what + ": expected CIDR:PROTO:PORT");
  size_t c1 = text.rfind(':', c2 - 1);
  if (c1 == std::string::npos || c1 == 0) return flag_error(what + ": expected CIDR:PROTO:PORT");
  std::string cidr = text.substr(0, c1), proto = text.substr(c1 + 1, c2 - c1 - 1),
              port = text.substr(c2 + 1);
  EgressRule rule;
  size_t slash = cidr.find('/');
  if (slash == std::string::npos) return flag_error(what + ": the address needs a /prefix length");
  std::string addr = cidr.substr(0, slash);
  if (inet_pton(AF_INET, addr.c_str(), rule.addr.data()) == 1) {
    rule.ipv6 = false;
  } else if (inet_pton(AF_INET6, addr.c_str(), rule.addr.data()) == 1) {
    rule.ipv6 = true;
  } else {
    return flag_error(what + ": '" + addr + "' is not an IPv4 or IPv6 address");
  }
  uint64_t len = TRY(parse_u64(what + " prefix", cidr.substr(slash + 1)));
  if (len > (rule.ipv6 ? 128u : 32u)) return flag_error(what + ": prefix length too long");
  rule.prefix_len = static_cast<uint8_t>(len);
  // Host bits past the prefix are cleared, so 10.1.2.3/8 means 10.0.0.0/8.
  for (size_t bit = len; bit < (rule.ipv6 ? 128u : 32u); ++bit)
    rule.addr[bit / 8] &= static_cast<uint8_t>(~(0x80u >> (bit % 8)));
  if (proto == "tcp")
    rule.protocol = EgressRule::Protocol::kTcp;
  else if (proto == "udp")
    rule.protocol = EgressRule::Protocol::kUdp;
  else if (proto == "icmp")
    rule.protocol = EgressRule::Protocol::kIcmp;
  else if (proto == "any")
    rule.protocol = EgressRule::Protocol::kAny;
  else
    return flag_error(what + ": protocol must be tcp, udp, icmp or any");
  if (port == "any" || port == "*") {
    rule.port = 0;
  } else {
    uint64_t p = TRY(parse_u64(what + " port", port));
    if (p == 0 || p > 65535) return flag_error(what + ": port must be 1-65535 or any");
    if (rule.protocol != EgressRule::Protocol::kTcp && rule.protocol != EgressRule::Protocol::kUdp)
      return flag_error(what + ": a port needs tcp or udp");
    rule.port = static_cast<uint16_t>(p);
  }
  return rule;
}

Result<BlockDeviceConfig> parse_drive_arg(const std::string& spec) {
  BlockDeviceConfig cfg;
  bool have_path = false;
  for (const auto& [k, v] : TRY(split_kv("--drive", spec))) {
    if (k == "path") {
      cfg.path = TRY(parse_path("--drive path", v));
      have_path = true;
    } else if (k == "ro") {
      cfg.read_only = TRY(parse_on_off("--drive ro", v));
    } else if (k == "overlay") {
      cfg.overlay_path = TRY(parse_path("--drive overlay", v));
    } else if (k == "serial") {
      if (v.size() > 20) return flag_error("--drive serial: at most 20 bytes (virtio-blk GET_ID)");
      cfg.serial = v;
    } else if (k == "bps") {
      cfg.limit.bytes = TRY(parse_u64("--drive bps", v));
    } else if (k == "iops") {
      cfg.limit.ops = TRY(parse_u64("--drive iops", v));
    } else {
      return flag_error("--drive: unknown key '" + k + "' (path, ro, overlay, serial, bps, iops)");
    }
  }
  if (!have_path) return flag_error("--drive: path= is required");
  if (!cfg.overlay_path.empty() && cfg.read_only)
    return flag_error("--drive: overlay= makes a writable disk; drop ro=on");
  if (!cfg.overlay_path.empty() && cfg.overlay_path == cfg.path)
    return flag_error("--drive: overlay must differ from path");
  return cfg;
}

Result<NetDeviceConfig> parse_net_arg(const std::string& spec) {
  NetDeviceConfig cfg;
  int backends = 0;
  for (const auto& [k, v] : TRY(split_kv("--net", spec))) {
    if (k == "tap") {
      if (v.empty() || v.size() >= 16)
        return flag_error("--net tap: interface name must be 1-15 bytes");
      cfg.backend = NetDeviceConfig::Backend::kTap;
      cfg.tap_name = v;
      ++backends;
    } else if (k == "unix") {
      cfg.backend = NetDeviceConfig::Backend::kUnixDatagram;
      cfg.unix_path = TRY(parse_socket_path("--net unix", v));
      ++backends;
    } else if (k == "mac") {
      cfg.mac = TRY(parse_mac(v));
      cfg.mac_set = true;
    } else if (k == "allow") {
      cfg.allow.push_back(TRY(parse_egress_rule(v)));
      cfg.egress_policy = true;
    } else if (k == "policy") {
      if (v == "deny")
        cfg.egress_policy = true;
      else if (v == "open")
        cfg.egress_policy = false;
      else
        return flag_error("--net policy: expected deny or open, got '" + v + "'");
    } else if (k == "rx_bps") {
      cfg.rx_limit.bytes = TRY(parse_u64("--net rx_bps", v));
    } else if (k == "tx_bps") {
      cfg.tx_limit.bytes = TRY(parse_u64("--net tx_bps", v));
    } else if (k == "rx_pps") {
      cfg.rx_limit.ops = TRY(parse_u64("--net rx_pps", v));
    } else if (k == "tx_pps") {
      cfg.tx_limit.ops = TRY(parse_u64("--net tx_pps", v));
    } else {
      return flag_error("--net: unknown key '" + k +
                        "' (tap, unix, mac, allow, policy, rx_bps, tx_bps, rx_pps, tx_pps)");
    }
  }
  if (backends != 1) return flag_error("--net: exactly one of tap= or unix= is required");
  if (!cfg.allow.empty() && !cfg.egress_policy)
    return flag_error("--net: allow= rules need policy=deny (the default when allow= is given)");
  return cfg;
}

Result<VsockDeviceConfig> parse_vsock_arg(const std::string& spec) {
  VsockDeviceConfig cfg;
  bool have_cid = false, have_uds = false;
  for (const auto& [k, v] : TRY(split_kv("--vsock", spec))) {
    if (k == "cid") {
      uint64_t cid = TRY(parse_u64("--vsock cid", v));
      // 0-2 are the hypervisor, local and host; 2^32-1 is "any".
      if (cid < 3 || cid >= 0xffffffffu) return flag_error("--vsock cid: must be 3 to 4294967294");
      cfg.guest_cid = static_cast<uint32_t>(cid);
      have_cid = true;
    } else if (k == "uds") {
      cfg.uds_path = TRY(parse_socket_path("--vsock uds", v));
      have_uds = true;
    } else {
      return flag_error("--vsock: unknown key '" + k + "' (cid, uds)");
    }
  }
  if (!have_cid || !have_uds) return flag_error("--vsock: cid= and uds= are required");
  return cfg;
}

Result<FsDeviceConfig> parse_fs_arg(const std::string& spec) {
  FsDeviceConfig cfg;
  bool have_tag = false, have_mode = false;
  for (const auto& [k, v] : TRY(split_kv("--fs", spec))) {
    if (k == "tag") {
      // virtio 1.2 §5.11.4: tag[36], UTF-8; control characters would break one-line messages.
      if (v.empty()) return flag_error("--fs tag: empty");
      if (v.size() > 36) return flag_error("--fs tag: at most 36 bytes (virtio-fs config space)");
      for (unsigned char c : v)
        if (c < 0x20 || c == 0x7f) return flag_error("--fs tag: control characters not allowed");
      cfg.tag = v;
      have_tag = true;
    } else if (k == "path") {
      cfg.shared_dir = TRY(parse_path("--fs path", v));
    } else if (k == "mode") {
      auto mode = parse_fs_mode(v);
      if (!mode) return flag_error("--fs mode: expected ro, rw or rw-nodelete, got '" + v + "'");
      cfg.mode = *mode;
      have_mode = true;
    } else {
      return flag_error("--fs: unknown key '" + k + "' (tag, path, mode)");
    }
  }
  if (!have_tag) return flag_error("--fs: tag= is required");
  if (have_mode && cfg.shared_dir.empty())
    return flag_error("--fs: mode= needs path= (an unbound device gets its mode when bound)");
  return cfg;
}

Result<bool> parse_device_flag(const std::string& flag,
                               const std::function<Result<std::string>()>& value,
                               DeviceConfigs& devices) {
  if (flag == "--drive") {
    devices.drives.push_back(TRY(parse_drive_arg(TRY(value()))));
  } else if (flag == "--net") {
    devices.nets.push_back(TRY(parse_net_arg(TRY(value()))));
  } else if (flag == "--vsock") {
    if (devices.vsock) return flag_error("--vsock: only one vsock device per VM");
    devices.vsock = TRY(parse_vsock_arg(TRY(value())));
  } else if (flag == "--rng") {
    if (devices.rng) return flag_error("--rng: given twice");
    devices.rng = RngDeviceConfig{};
  } else if (flag == "--fs") {
    FsDeviceConfig fs = TRY(parse_fs_arg(TRY(value())));
    // The control API binds by tag, and a guest mounts by it: two devices may not share one.
    for (const auto& other : devices.filesystems)
      if (other.tag == fs.tag) return flag_error("--fs: tag '" + fs.tag + "' given twice");
    devices.filesystems.push_back(std::move(fs));
  } else {
    return false;
  }
  return true;
}

Status check_no_seccomp_allowed() {
  const char* allow = getenv("CARAPACE_ALLOW_NO_SECCOMP");
  if (allow == nullptr || std::string(allow) != "1")
    return as_invalid_input(
        make_error("--no-seccomp is for debugging and needs CARAPACE_ALLOW_NO_SECCOMP=1"));
  return {};
}

}  // namespace carapace
