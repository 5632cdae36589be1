#include "vmm/cli/fork_command.h"

#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "common/http/http_client.h"
#include "vmm/machine/exit_status.h"

namespace carapace {

namespace {

const char kForkUsage[] =
    "usage: carapace fork --api-sock PATH [--clones N]\n"
    "  Forks the running VM of the VMM serving PATH (carapace run --api-sock PATH): the VM is\n"
    "  paused, copied into memory and resumed, and N children (default 1, at most 64) start from\n"
    "  the copy inside that VMM process. Each child gets its own identity, numbered on from the\n"
    "  last fork (vsock cid C+i and socket UDS.<i>, net backend .<i>, MAC + i, console file .<i>;\n"
    "  see carapace restore --help). A VM with a writable drive cannot be forked.\n"
    "  Prints the API's answer (JSON): the children, the time the fork took, the VM's state.\n"
    "  Exit status: 0 forked, 2 bad input or refused (4xx), 1 anything else.\n";

int usage_error(const std::string& msg) {
  fprintf(stderr, "carapace fork: %s\n", msg.c_str());
  return kExitUsage;
}

}  // namespace

int cmd_fork(const std::vector<std::string>& args) {
  std::string sock;
  uint64_t clones = 1;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      fputs(kForkUsage, stdout);
      return kExitOk;
    }
    if (i + 1 >= args.size()) return usage_error(a + " needs a value (see carapace fork --help)");
    const std::string& v = args[++i];
    if (a == "--api-sock") {
      sock = v;
    } else if (a == "--clones") {
      char* end = nullptr;
      errno = 0;
      clones = strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || errno != 0 || clones == 0 || clones > 64)
        return usage_error("--clones: expected 1 to 64, got '" + v + "'");
    } else {
      return usage_error("unknown option '" + a + "' (see carapace fork --help)");
    }
  }
  if (sock.empty()) return usage_error("--api-sock PATH is required");
  const std::string body = nlohmann::json{{"clones", clones}}.dump();
  auto r =
      http::http_request(sock, "PUT", "/vm/fork", body, {{"Content-Type", "application/json"}});
  if (!r.ok()) {
    fprintf(stderr, "carapace fork: %s\n", r.error().describe().c_str());
    return kExitHostError;
  }
  if (r->status != 200) {
    fprintf(stderr, "carapace fork: HTTP %d: %s\n", r->status, r->body.c_str());
    return r->status >= 400 && r->status < 500 ? kExitUsage : kExitHostError;
  }
  printf("%s\n", r->body.c_str());
  return kExitOk;
}

}  // namespace carapace
