// The microvm back end's pure parts: the `carapace run` / `carapace restore` command lines it
// spawns, the per-VM file names and CIDs, and the random tokens. No I/O apart from getrandom,
// so every rule is unit tested (tests/service/microvm_args_test.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "vmm/base/result.h"
#include "vmm/service/backend.h"

namespace carapace::service {

// A file console never grows past this (SECURITY-CHECKS 29); the rest is dropped and counted.
inline constexpr uint64_t kConsoleMaxBytes = 1 << 20;

// One VMM process's files, all inside the template's folder. Names are short: a Unix socket
// path has 108 bytes, and the vsock device adds "_<port>" for guest-initiated connections.
struct VmPaths {
  std::string api_sock;
  std::string vsock_uds;
  std::string console;
  std::string log;  // the VMM's own stdout/stderr
  std::vector<std::string> all() const { return {api_sock, vsock_uds, console, log}; }
};
VmPaths vm_paths(const std::string& dir, const std::string& name);
// The longest socket path the back end makes under `dir` must fit sockaddr_un.
Status check_dir_fits_sockets(const std::string& dir);

// Hands out vsock CIDs unique within the process (every template of the daemon shares one):
// from `first` up, wrapping to 3 (0-2 are reserved) before 2^32 - 1.
class CidAllocator {
 public:
  explicit CidAllocator(uint32_t first = 3) : next_(first < 3 ? 3 : first) {}
  uint32_t next();

 private:
  std::atomic<uint32_t> next_;
};

// `carapace run` for the template's boot VM; `token` goes on the kernel command line as
// `carapace.token=` (the agent's first token; replaced in every instance by post_restore).
// `seccomp` false adds --no-seccomp (the VMM then also needs CARAPACE_ALLOW_NO_SECCOMP=1).
std::vector<std::string> boot_argv(const TemplateSpec& spec, const std::string& carapace_exe,
                                   const VmPaths& paths, uint32_t cid, const std::string& token,
                                   bool seccomp = true);
// `carapace restore --paused` of one instance from `snapshot_dir`, with its own identity.
std::vector<std::string> restore_argv(const TemplateSpec& spec, const std::string& carapace_exe,
                                      const std::string& snapshot_dir, const VmPaths& paths,
                                      uint32_t cid, bool seccomp = true);

// `bytes` random bytes from getrandom, raw or as lower-case hex.
Result<std::string> random_bytes(size_t bytes);
Result<std::string> random_hex(size_t bytes);

// The last `max` bytes of a file, one line (newlines and control bytes shown as spaces), for
// error messages ("console tail: ...").
std::string file_tail(const std::string& path, size_t max = 300);

}  // namespace carapace::service
