// `carapace serve` over the fake back end, as a separate process: the restart tests kill it with
// SIGKILL and start it again on the same state dir.
//   service_fake_serve --socket PATH --state-dir DIR [--config FILE]
#include <cstdio>
#include <string>

#include "daemon/api/daemon.h"
#include "tests/service/fake_backend.h"

int main(int argc, char** argv) {
  using namespace carapace;
  service::DaemonOptions o;
  std::string config;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--socket") {
      o.socket_path = argv[i + 1];
    } else if (flag == "--state-dir") {
      o.service.state_dir = argv[i + 1];
    } else if (flag == "--config") {
      config = argv[i + 1];
    } else {
      fprintf(stderr, "service_fake_serve: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (!config.empty()) {
    auto c = service::load_daemon_config(config);
    if (!c.ok()) {
      fprintf(stderr, "service_fake_serve: %s\n", c.error().describe().c_str());
      return 2;
    }
    o.service.config = *c;
  }
  o.service.factories[service::Isolation::kMicrovm] = testing::fake_backend_factory();
  o.service.default_isolation = service::Isolation::kMicrovm;
  return service::run_daemon(std::move(o));
}
