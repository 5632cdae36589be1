#include "guest/agent/egress_trust.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/base/unique_fd.h"

namespace carapace::agent {
namespace {

constexpr size_t kMaxSystemBundleBytes = 8 << 20;
constexpr char kCaName[] = "ca.pem";
constexpr char kBundleName[] = "ca-bundle.pem";

Error sys_fail(const std::string& what) {
  return make_error(what + ": " + strerror(errno));
}

// The folder, made if missing: ours, a real folder (not a link another user left in /tmp).
Status own_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return sys_fail("mkdir " + dir);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return sys_fail("lstat " + dir);
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
    return make_error(dir + " is not a folder of this agent's own");
  if ((st.st_mode & 07777) != 0755 && ::chmod(dir.c_str(), 0755) != 0)
    return sys_fail("chmod " + dir);
  return ok_status();
}

// `text` as `dir`/`name`, by a rename of a fresh file (an exec reading it sees the old or the
// new whole).
Status write_file(const std::string& dir, const char* name, const std::string& text) {
  const std::string path = dir + "/" + name;
  const std::string tmp = path + ".new";
  ::unlink(tmp.c_str());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) return sys_fail("open " + tmp);
  size_t at = 0;
  while (at < text.size()) {
    const ssize_t n = ::write(fd.get(), text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::unlink(tmp.c_str());
      return sys_fail("write " + tmp);
    }
    at += static_cast<size_t>(n);
  }
  if (::fchmod(fd.get(), 0644) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return sys_fail("rename " + tmp);
  }
  return ok_status();
}

// The system bundle, or "" when it cannot be read (a minimal image: the CA alone then).
std::string read_system_bundle(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return "";
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxSystemBundleBytes) return "";
  }
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

}  // namespace

std::vector<std::string> default_egress_trust_dirs() {
  std::vector<std::string> out;
  if (::geteuid() == 0) out.emplace_back("/run/carapace-egress-ca");
  out.push_back("/tmp/carapace-egress-ca-" + std::to_string(::geteuid()));
  return out;
}

const std::vector<std::string>& egress_trust_env_names() {
  static const std::vector<std::string> names = {"SSL_CERT_FILE",  "REQUESTS_CA_BUNDLE",
                                                 "CURL_CA_BUNDLE", "PIP_CERT",
                                                 "GIT_SSL_CAINFO", "NODE_EXTRA_CA_CERTS"};
  return names;
}

bool egress_ca_pem_ok(std::string_view pem) {
  if (pem.size() > kMaxEgressCaBytes || !pem.starts_with("-----BEGIN CERTIFICATE-----"))
    return false;
  if (pem.find("-----END CERTIFICATE-----") == std::string_view::npos) return false;
  for (char c : pem) {
    if (!(c == '\n' || c == '\r' || (c >= 0x20 && c <= 0x7e))) return false;
  }
  return true;
}

Result<std::vector<std::pair<std::string, std::string>>> install_egress_ca(
    const std::string& ca_pem, const std::vector<std::string>& dirs,
    const std::string& system_bundle) {
  if (!egress_ca_pem_ok(ca_pem)) return make_error("the egress CA is not one PEM certificate");
  std::string ca = ca_pem;
  if (ca.back() != '\n') ca += '\n';
  const std::string bundle_text = read_system_bundle(system_bundle) + ca;
  Status written = make_error("no folder for the egress CA");
  std::string dir;
  for (const std::string& d : dirs) {
    written = own_dir(d);
    if (written.ok()) written = write_file(d, kCaName, ca);
    if (written.ok()) written = write_file(d, kBundleName, bundle_text);
    if (written.ok()) {
      dir = d;
      break;
    }
  }
  if (!written.ok()) return written.error();
  // An older copy elsewhere (another folder won before) is not left behind.
  for (const std::string& d : dirs) {
    if (d != dir) remove_egress_ca({d});
  }
  const std::string bundle = dir + "/" + kBundleName;
  std::vector<std::pair<std::string, std::string>> env;
  for (const std::string& name : egress_trust_env_names())
    env.emplace_back(name, name == "NODE_EXTRA_CA_CERTS" ? dir + "/" + kCaName : bundle);
  return env;
}

void remove_egress_ca(const std::vector<std::string>& dirs) {
  for (const std::string& dir : dirs) {
    ::unlink((dir + "/" + kCaName).c_str());
    ::unlink((dir + "/" + kBundleName).c_str());
  }
}

}  // namespace carapace::agent
