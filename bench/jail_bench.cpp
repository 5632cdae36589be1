// The cost of the jail: in one run, boots the test guest's boot-info scenario N times
// each with plain `carapace run` (default deferred teardown, and `--teardown sync`), with
// `carapace jail -- run` (new network namespace, the default), with `carapace jail --netns
// none -- run` and with `--cgroup-version 2` (no limits, no v1 migration), interleaved so all see
// the same host conditions, and prints the medians of exec → exit side by side. In the same run,
// the process isolation back end (`carapace run --isolation process`): sandbox create
// → the agent's first `ping` answered with its token, and stop (SIGTERM) → everything removed.
// Needs root.
//
//   build/bench/jail_bench [--runs N] [--carapace PATH] [--guest PATH] [--chroot-base DIR]
//                          [--rootfs IMG] [--agent PATH]
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "common/agent/agent_client.h"
#include "tests/integration/process_runner.h"

namespace {

using carapace::testing::run_process;

using carapace::bench::absolute;
using carapace::bench::build_path;

std::string default_path(const char* argv0, const char* rel) {
  return absolute(build_path(argv0, rel));
}

struct Variant {
  const char* name;
  std::vector<std::string> prefix;  // before `run ...`
  std::vector<double> ms;
  int failures = 0;
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// One process-isolation sandbox: exec → agent ping answered (with the token), then SIGTERM →
// the supervisor's exit (jail, cgroups and socket removed). False on failure, with `err` set.
bool process_sandbox_once(const std::string& carapace, const std::string& rootfs,
                          const std::string& agent, const std::string& dir, double* create_ms,
                          double* stop_ms, std::string* err) {
  using Clock = std::chrono::steady_clock;
  const std::string sock = dir + "/agent.sock", token_file = dir + "/token";
  const char kToken[] = "be0c4";
  {
    std::ofstream t(token_file);
    t << kToken;
  }
  chmod(token_file.c_str(), 0600);
  const auto t0 = Clock::now();
  carapace::testing::RunningProcess proc(
      {carapace,       "run",          "--isolation", "process",    "--rootfs",
       rootfs,         "--agent-sock", sock,          "--id",       "bench-process",
       "--token-file", token_file,     "--agent",     agent,        "--chroot-base",
       dir + "/jails", "--mem-limit",  "512",         "--pids-max", "64"});
  bool up = false;
  while (!up && Clock::now() - t0 < std::chrono::seconds(30)) {
    if (auto c = carapace::AgentClient::connect_unix(sock); c.ok()) {
      c->set_token(kToken);
      auto p = c->ping();
      up = p.ok() && p->token_set;
    }
    if (!up) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  *create_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const auto t1 = Clock::now();
  if (proc.started()) kill(proc.pid(), SIGTERM);
  auto res = proc.finish(std::chrono::seconds(30));
  *stop_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  unlink(token_file.c_str());
  if (!up) *err = "agent never answered: " + res.err;
  return up;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 20;
  std::string carapace = default_path(argv[0], "carapace");
  std::string guest = default_path(argv[0], "guest/testguest");
  std::string base = "/tmp/carapace-jail-bench";
  std::string rootfs = default_path(argv[0], "guest/rootfs.ext4");
  std::string agent = default_path(argv[0], "guest/carapace-agent");
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) {
      fprintf(stderr, "jail_bench: %s needs a value\n", a.c_str());
      return 2;
    }
    std::string v = argv[++i];
    if (a == "--runs") {
      runs = std::max(1, atoi(v.c_str()));
    } else if (a == "--carapace") {
      carapace = absolute(v);
    } else if (a == "--guest") {
      guest = absolute(v);
    } else if (a == "--chroot-base") {
      base = v;
    } else if (a == "--rootfs") {
      rootfs = absolute(v);
    } else if (a == "--agent") {
      agent = absolute(v);
    } else {
      fprintf(stderr, "jail_bench: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  if (geteuid() != 0) {
    fprintf(stderr, "jail_bench: must run as root (the jailer needs it)\n");
    return 1;
  }
  const std::vector<std::string> jail = {
      carapace,        "jail",  "--id",       "bench", "--exec-file", carapace,
      "--uid",         "61234", "--gid",      "61234", "--bind",      guest + ":ro",
      "--chroot-base", base,    "--pids-max", "64",    "--mem-limit", "512"};
  // Inside the jail the VMM is PID 1 of its namespace, whose exit waits for every process in it:
  // the deferred KVM teardown (a forked child that closes the VM's fds after the VMM exits)
  // cannot outlive it. `--teardown sync` outside the jail shows that share of the cost.
  std::vector<Variant> variants = {{"carapace run", {carapace}, {}, 0},
                                   {"run --teardown sync", {carapace}, {}, 0},
                                   {"jail (new netns)", jail, {}, 0},
                                   {"jail --netns none", jail, {}, 0},
                                   {"jail cgroup v2 only", jail, {}, 0}};
  variants[2].prefix.push_back("--");
  variants[3].prefix.insert(variants[3].prefix.end(), {"--netns", "none", "--"});
  // No v1 migration (the child is cloned straight into its v2 cgroup); the limits above need
  // v1 controllers on a hybrid host, so this variant runs without them.
  variants[4].prefix.resize(variants[4].prefix.size() - 4);
  variants[4].prefix.insert(variants[4].prefix.end(), {"--cgroup-version", "2", "--"});
  const std::vector<std::string> run = {"run", "--kernel", guest, "--cmdline",
                                        "testguest.run=boot-info"};
  // The process back end: no VM; its sandbox is up when the agent answers.
  const std::string process_dir = base + "-process";
  mkdir(process_dir.c_str(), 0700);
  Variant process_create{"process: create->ping", {}, {}, 0};
  Variant process_stop{"process: stop->clean", {}, {}, 0};
  for (int r = 0; r < runs; ++r) {
    double create_ms = 0, stop_ms = 0;
    std::string err;
    if (process_sandbox_once(carapace, rootfs, agent, process_dir, &create_ms, &stop_ms, &err)) {
      process_create.ms.push_back(create_ms);
      process_stop.ms.push_back(stop_ms);
    } else if (process_create.failures++ == 0) {
      fprintf(stderr, "jail_bench: process sandbox failed: %s\n", err.c_str());
    }
    for (Variant& v : variants) {
      std::vector<std::string> cmd = v.prefix;
      cmd.insert(cmd.end(), run.begin(), run.end());
      if (&v == &variants[1]) cmd.insert(cmd.end(), {"--teardown", "sync"});
      auto res = run_process(cmd, std::chrono::seconds(60));
      if (res.exit_code != 0 || res.out.find("TESTGUEST PASS boot-info") == std::string::npos) {
        if (v.failures++ == 0)
          fprintf(stderr, "jail_bench: %s failed (exit %d): %s\n", v.name, res.exit_code,
                  res.err.c_str());
        continue;
      }
      v.ms.push_back(std::chrono::duration<double, std::milli>(res.wall).count());
    }
  }
  printf("boot-info, exec -> exit, %d runs each (ms)\n", runs);
  printf("%-22s %8s %8s %8s %8s\n", "", "median", "p10", "p90", "failed");
  variants.push_back(std::move(process_create));
  variants.push_back(std::move(process_stop));
  rmdir((process_dir + "/jails").c_str());
  rmdir(process_dir.c_str());
  for (const Variant& v : variants)
    printf("%-22s %8.2f %8.2f %8.2f %8d\n", v.name, percentile(v.ms, 0.5), percentile(v.ms, 0.1),
           percentile(v.ms, 0.9), v.failures);
  double plain = percentile(variants[0].ms, 0.5);
  if (plain > 0)
    printf("jail overhead (median): %+.2f ms with a new netns, %+.2f ms without\n",
           percentile(variants[2].ms, 0.5) - plain, percentile(variants[3].ms, 0.5) - plain);
  int failed = 0;
  for (const Variant& v : variants)
    failed += v.failures;
  return failed ? 1 : 0;
}
