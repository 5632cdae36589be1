// The sandbox service end to end: starts `carapace serve` on a private state dir,
// builds templates through its API and measures, in one run:
//   - sandbox create → ready, served from the template's pool and with no pool (restore now);
//     a microVM sandbox is "ready" when POST /sandboxes returns: the daemon has resumed the VM,
//     given its agent a fresh token (post_restore) and heard it answer;
//   - sandbox create → first `exec` answered, for the process back end (the real agent runs
//     there; the test guest's agent-ping answers only ping/post_restore, so a microVM exec needs
//     the real image, i.e. a VMX/SVM host);
//   - 50 concurrent creates: p50/p95/p99 and sandboxes per second.
//
//   build/bench/service [--rounds N] [--concurrent N] [--pool N] [--carapace PATH]
//                       [--guest PATH] [--rootfs PATH | --no-process] [--jail on|off]
// --jail sets the daemon's "jail" (every microVM's VMM inside `carapace jail`; default: on as
// root).
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_support.h"
#include "common/http/http_client.h"

extern char** environ;

namespace {

using carapace::bench::absolute;
using carapace::bench::build_path;
using carapace::bench::Clock;
using carapace::bench::ms_since;
using nlohmann::json;

std::string default_path(const char* argv0, const char* rel) {
  return absolute(build_path(argv0, rel));
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(v.size() - 1, i)];
}

struct Api {
  std::string sock;
  // One request on a fresh connection; a transport error is status 0.
  std::pair<int, json> call(const std::string& method, const std::string& target,
                            const json& body = nullptr) const {
    carapace::http::ClientOptions opt;
    opt.timeout = std::chrono::milliseconds(600'000);
    std::string text = body.is_null() ? "" : body.dump();
    carapace::http::HttpHeaders headers;
    if (!text.empty()) headers.add("Content-Type", "application/json");
    auto r = carapace::http::http_request(sock, method, target, text, headers, opt);
    if (!r.ok()) return {0, json{{"error", r.error().describe()}}};
    json j = json::parse(r->body, nullptr, false);
    if (j.is_discarded()) j = json{{"raw", r->body}};
    return {r->status, j};
  }
};

[[noreturn]] void die(const std::string& msg) {
  fprintf(stderr, "service bench: %s\n", msg.c_str());
  exit(1);
}

json must(const std::pair<int, json>& r, int want, const char* what) {
  if (r.first != want)
    die(std::string(what) + ": HTTP " + std::to_string(r.first) + " " + r.second.dump());
  return r.second;
}

bool wait_pool(const Api& api, const std::string& tpl, int ready, double timeout_ms) {
  auto t0 = Clock::now();
  while (ms_since(t0) < timeout_ms) {
    auto [st, j] = api.call("GET", "/templates/" + tpl);
    if (st == 200 && j["pool"]["ready"].get<int>() >= ready) return true;
    usleep(5000);
  }
  return false;
}

struct Series {
  explicit Series(std::string n = "") : name(std::move(n)) {}
  std::string name;
  std::vector<double> ms;
  void print() const {
    if (ms.empty()) {
      printf("  %-52s (no samples)\n", name.c_str());
      return;
    }
    printf("  %-52s p50 %8.2f ms  p95 %8.2f ms  min %8.2f ms  (n=%zu)\n", name.c_str(),
           percentile(ms, 0.5), percentile(ms, 0.95), *std::min_element(ms.begin(), ms.end()),
           ms.size());
  }
};

// create → ready (and for `exec_argv`, → first exec answered), then delete; with `pool`, waits for
// the pool to refill before each round so every create is a hit.
void measure_creates(const Api& api, const std::string& tpl, int rounds, bool pool, bool exec,
                     Series& create, Series& first_exec) {
  for (int i = 0; i < rounds; ++i) {
    if (pool && !wait_pool(api, tpl, 1, 60'000)) die("pool did not refill within 60 s");
    auto t0 = Clock::now();
    json sb = must(api.call("POST", "/sandboxes", {{"template", tpl}, {"timeout_s", 120}}), 201,
                   "POST /sandboxes");
    create.ms.push_back(ms_since(t0));
    if (pool && !sb.value("from_pool", false)) fprintf(stderr, "  (round %d was a pool miss)\n", i);
    const std::string id = sb["id"];
    if (exec) {
      must(api.call("POST", "/sandboxes/" + id + "/exec", {{"argv", {"true"}}}), 200, "exec");
      first_exec.ms.push_back(ms_since(t0));
    }
    api.call("DELETE", "/sandboxes/" + id);
  }
}

void concurrent_creates(const Api& api, const std::string& tpl, int n) {
  std::vector<double> ms(n, -1);
  std::vector<std::string> ids(n);
  std::atomic<int> go{0};
  std::vector<std::thread> threads;
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      while (go.load() == 0)
        std::this_thread::yield();
      auto t = Clock::now();
      auto [st, j] = api.call("POST", "/sandboxes", {{"template", tpl}, {"timeout_s", 300}});
      if (st == 201) {
        ms[i] = ms_since(t);
        ids[i] = j["id"];
      } else {
        fprintf(stderr, "  create %d: HTTP %d %s\n", i, st, j.dump().c_str());
      }
    });
  }
  t0 = Clock::now();
  go = 1;
  for (auto& t : threads)
    t.join();
  const double wall = ms_since(t0);
  std::vector<double> ok;
  for (double v : ms)
    if (v >= 0) ok.push_back(v);
  printf(
      "  %d concurrent creates: %zu ok, p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, wall %.1f ms, "
      "%.1f sandboxes/s\n",
      n, ok.size(), percentile(ok, 0.5), percentile(ok, 0.95), percentile(ok, 0.99), wall,
      wall > 0 ? 1000.0 * static_cast<double>(ok.size()) / wall : 0);
  for (const auto& id : ids)
    if (!id.empty()) api.call("DELETE", "/sandboxes/" + id);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 20, concurrent = 50, pool = 4;
  std::string carapace = default_path(argv[0], "carapace");
  std::string guest = default_path(argv[0], "guest/testguest");
  std::string rootfs = default_path(argv[0], "guest/rootfs.ext4");
  bool process = true;
  std::string jail;  // "": the daemon's default
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--no-process") {
      process = false;
      continue;
    }
    if (i + 1 >= argc) die(a + " needs a value");
    std::string v = argv[++i];
    if (a == "--rounds")
      rounds = std::max(1, atoi(v.c_str()));
    else if (a == "--concurrent")
      concurrent = std::max(1, atoi(v.c_str()));
    else if (a == "--pool")
      pool = std::max(1, atoi(v.c_str()));
    else if (a == "--carapace")
      carapace = absolute(v);
    else if (a == "--guest")
      guest = absolute(v);
    else if (a == "--rootfs")
      rootfs = absolute(v);
    else if (a == "--jail" && (v == "on" || v == "off"))
      jail = v;
    else
      die("unknown flag " + a);
  }
  if (process && access(rootfs.c_str(), R_OK) != 0)
    die("no rootfs at " + rootfs + " (build it with tools/build-rootfs, or pass --no-process)");

  char tmpl[] = "/tmp/carapace-service-bench-XXXXXX";
  if (!mkdtemp(tmpl)) die("mkdtemp failed");
  const std::string dir = tmpl;
  const std::string sock = dir + "/api.sock";
  const std::string log = dir + "/serve.log";
  std::vector<std::string> args = {carapace, "serve",       "--socket",
                                   sock,     "--state-dir", dir + "/state"};
  if (!jail.empty()) {
    const std::string config = dir + "/config.json";
    FILE* f = fopen(config.c_str(), "w");
    if (f == nullptr) die("cannot write " + config);
    fprintf(f, "{\"jail\": %s}\n", jail == "on" ? "true" : "false");
    fclose(f);
    args.insert(args.end(), {"--config", config});
  }
  std::vector<char*> cargv;
  for (auto& s : args)
    cargv.push_back(s.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t daemon = 0;
  if (posix_spawn(&daemon, carapace.c_str(), &fa, nullptr, cargv.data(), environ) != 0)
    die("cannot start " + carapace);
  posix_spawn_file_actions_destroy(&fa);

  Api api{sock};
  auto t0 = Clock::now();
  while (api.call("GET", "/health").first != 200) {
    if (ms_since(t0) > 10'000) die("carapace serve did not answer within 10 s (log: " + log + ")");
    usleep(2000);
  }
  json health = api.call("GET", "/health").second;
  printf("carapace service bench: daemon up in %.1f ms; %s\n", ms_since(t0), health.dump().c_str());

  // microVM templates from the test guest (its agent-ping scenario answers the agent protocol).
  json spec = {
      {"isolation", "microvm"}, {"kernel", guest}, {"boot_args", "testguest.run=agent-ping"},
      {"mem_mib", 64},          {"vcpus", 1},      {"pool_size", pool}};
  t0 = Clock::now();
  json tpl = must(api.call("POST", "/templates", spec), 201, "POST /templates (microvm)");
  printf("template build (boot test guest, wait for agent, snapshot): %.1f ms\n", ms_since(t0));
  spec["pool_size"] = 0;
  json tpl0 = must(api.call("POST", "/templates", spec), 201, "POST /templates (microvm, no pool)");
  if (!wait_pool(api, tpl["id"], pool, 120'000)) die("the pool did not fill within 120 s");

  printf("\nmicroVM (test guest), create → agent ready (%d rounds each):\n", rounds);
  Series hit{"from the pool"}, miss{"no pool (restore on request)"}, none;
  measure_creates(api, tpl["id"], rounds, true, false, hit, none);
  measure_creates(api, tpl0["id"], rounds, false, false, miss, none);
  hit.print();
  miss.print();
  if (!hit.ms.empty() && !miss.ms.empty())
    printf("  pool speed-up: %.1fx\n", percentile(miss.ms, 0.5) / percentile(hit.ms, 0.5));

  wait_pool(api, tpl["id"], pool, 60'000);
  printf("\nmicroVM (test guest), pool of %d:\n", pool);
  concurrent_creates(api, tpl["id"], concurrent);

  if (process) {
    json pspec = {
        {"isolation", "process"}, {"rootfs", rootfs}, {"mem_mib", 256}, {"pool_size", pool}};
    json ptpl = must(api.call("POST", "/templates", pspec), 201, "POST /templates (process)");
    pspec["pool_size"] = 0;
    json ptpl0 =
        must(api.call("POST", "/templates", pspec), 201, "POST /templates (process, no pool)");
    if (!wait_pool(api, ptpl["id"], pool, 120'000)) die("the process pool did not fill in 120 s");
    printf("\nprocess back end (agent in a jail; weaker than a microVM), %d rounds each:\n",
           rounds);
    Series pc{"create → ready, from the pool"}, pe{"create → first exec answered, from the pool"};
    Series pc0{"create → ready, no pool"}, pe0{"create → first exec answered, no pool"};
    measure_creates(api, ptpl["id"], rounds, true, true, pc, pe);
    measure_creates(api, ptpl0["id"], rounds, false, true, pc0, pe0);
    pc.print();
    pe.print();
    pc0.print();
    pe0.print();
    wait_pool(api, ptpl["id"], pool, 60'000);
    printf("\nprocess back end, pool of %d:\n", pool);
    concurrent_creates(api, ptpl["id"], concurrent);
  }

  kill(daemon, SIGTERM);
  int status = 0;
  waitpid(daemon, &status, 0);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}
