// Guest I/O harness: block and vsock performance measured through the test guest's virtio drivers
// with the real `carapace` binary over KVM.
//
//   block: the guest's blk-bench scenario on a filled 64 MiB image, once with the io_uring backend
//          and once with the synchronous one (CARAPACE_BLOCK_BACKEND), interleaved `--runs` times;
//          4 KiB random reads at queue depth 1 (latency) and 32 (IOPS), 128 KiB sequential reads
//          and writes (MB/s). The guest times each phase with its PIT-calibrated TSC.
//   vsock: the guest's vsock-bench scenario; the host times CONNECT -> OK, 64-byte echo round
//          trips, host -> guest and guest -> host streams over the VMM's Unix socket.
//
//   build/bench/guest_io_bench [--runs N] [--ms MS] [--mib MIB] [--rtts N] [--carapace PATH]
//                              [--guest PATH] [--only blk|vsock] [--no-event-idx]
//
// --no-event-idx: the guest driver does not negotiate VIRTIO_RING_F_EVENT_IDX (it then notifies on
// every publish and asks for no interrupts).
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "tests/integration/process_runner.h"
#include "tests/integration/unix_sockets.h"

namespace {

using namespace carapace::bench;
using carapace::testing::ProcessResult;
using carapace::testing::read_line;
using carapace::testing::RunningProcess;
using carapace::testing::SocketEnd;
using carapace::testing::unix_socket;

struct Options {
  int runs = 3;
  int ms = 500;
  int mib = 256;
  int rtts = 2000;
  bool event_idx = true;
  std::string carapace, guest, only;
};

std::string extra_words(const Options& o) {
  return o.event_idx ? "" : " testguest.bench.no-event-idx";
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

std::vector<std::string> vm_argv(const Options& o, const std::string& cmdline,
                                 const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {o.carapace,  "run",   "--kernel",  o.guest,
                                   "--cmdline", cmdline, "--timeout", "300"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return argv;
}

// "testguest: bench <phase> k=v k=v ..." lines → phase → key → value.
std::map<std::string, std::map<std::string, double>> parse_bench(const std::string& out) {
  std::map<std::string, std::map<std::string, double>> phases;
  size_t pos = 0;
  const std::string tag = "testguest: bench ";
  while ((pos = out.find(tag, pos)) != std::string::npos) {
    size_t end = out.find('\n', pos);
    std::string line = out.substr(pos + tag.size(), end - pos - tag.size());
    pos = end;
    size_t sp = line.find(' ');
    std::string phase = line.substr(0, sp);
    if (phase.find('=') != std::string::npos) continue;  // the settings line
    while (sp != std::string::npos) {
      size_t next = line.find(' ', sp + 1);
      std::string kv = line.substr(sp + 1, next == std::string::npos ? next : next - sp - 1);
      size_t eq = kv.find('=');
      if (eq != std::string::npos) phases[phase][kv.substr(0, eq)] = atof(kv.c_str() + eq + 1);
      sp = next;
    }
  }
  return phases;
}

bool write_image(const std::string& path, size_t bytes) {
  FILE* f = fopen(path.c_str(), "wb");
  if (!f) return false;
  std::vector<uint64_t> chunk(1 << 17);
  bool ok = true;
  for (size_t off = 0; off < bytes && ok; off += chunk.size() * 8) {
    for (size_t i = 0; i < chunk.size(); ++i)
      chunk[i] = 0xb10c000000000000ull | ((off >> 3) + i);
    ok = fwrite(chunk.data(), 8, chunk.size(), f) == chunk.size();
  }
  return fclose(f) == 0 && ok;
}

int bench_block(const Options& o, const std::string& dir) {
  const std::string img = dir + "/bench.img";
  if (!write_image(img, 64u << 20)) {
    fprintf(stderr, "guest_io_bench: cannot write %s\n", img.c_str());
    return 1;
  }
  const char* backends[] = {"io_uring", "sync"};
  const char* phases[] = {"rand4k-qd1", "rand4k-qd32", "seq128k-read", "seq128k-write"};
  std::map<std::string, std::map<std::string, std::vector<double>>> iops, mbps, lat;
  int failures = 0;
  for (int run = 0; run < o.runs; ++run) {
    for (const char* backend : backends) {
      setenv("CARAPACE_BLOCK_BACKEND", backend, 1);
      auto r = carapace::testing::run_process(
          vm_argv(
              o,
              "testguest.run=blk-bench testguest.bench.ms=" + std::to_string(o.ms) + extra_words(o),
              {"--drive", "path=" + img}),
          std::chrono::seconds(120));
      unsetenv("CARAPACE_BLOCK_BACKEND");
      if (r.out.find("TESTGUEST PASS blk-bench") == std::string::npos || r.exit_code != 0) {
        fprintf(stderr, "guest_io_bench: blk-bench (%s) failed:\n%s\n%s\n", backend, r.out.c_str(),
                r.err.c_str());
        ++failures;
        continue;
      }
      for (auto& [phase, kv] : parse_bench(r.out)) {
        iops[backend][phase].push_back(kv["iops"]);
        mbps[backend][phase].push_back(kv["mbps"]);
        lat[backend][phase].push_back(kv["lat_ns"] / 1000.0);
      }
    }
  }
  unlink(img.c_str());
  printf(
      "block: blk-bench through the guest driver, 64 MiB image (page cache), %d ms per phase, "
      "median of %d runs per backend, interleaved\n",
      o.ms, o.runs);
  printf("%-14s %-9s %10s %10s %12s\n", "phase", "backend", "IOPS", "MB/s", "latency us");
  for (const char* phase : phases) {
    for (const char* backend : backends) {
      printf("%-14s %-9s %10.0f %10.0f %12.1f\n", phase, backend, median(iops[backend][phase]),
             median(mbps[backend][phase]), median(lat[backend][phase]));
    }
  }
  return failures ? 1 : 0;
}

bool read_exact(int fd, char* buf, size_t n, int timeout_ms = 10000) {
  size_t got = 0;
  while (got < n) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return false;
    ssize_t r = read(fd, buf + got, n - got);
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

// CONNECT <port>; returns the connection and the handshake time, or an invalid fd.
carapace::UniqueFd vsock_connect(const std::string& uds, int port, double* ms) {
  auto t0 = Clock::now();
  carapace::UniqueFd fd = unix_socket(SOCK_STREAM, uds, SocketEnd::kConnect);
  if (!fd.valid()) return fd;
  std::string req = "CONNECT " + std::to_string(port) + "\n";
  if (write(fd.get(), req.data(), req.size()) != static_cast<ssize_t>(req.size()) ||
      read_line(fd.get(), 10000).rfind("OK ", 0) != 0)
    return carapace::UniqueFd();
  if (ms) *ms = ms_since(t0);
  return fd;
}

int bench_vsock(const Options& o, const std::string& dir) {
  const std::string uds = dir + "/v.sock";
  const size_t bytes = static_cast<size_t>(o.mib) << 20;
  RunningProcess vm(
      vm_argv(o, "testguest.run=vsock-bench testguest.bench.bytes=" + std::to_string(bytes),
              {"--vsock", "cid=3,uds=" + uds}));
  if (!vm.wait_for_output("testguest: vsock-bench ready", std::chrono::seconds(60))) {
    fprintf(stderr, "guest_io_bench: vsock-bench did not start:\n%s\n%s\n", vm.out().c_str(),
            vm.err().c_str());
    return 1;
  }
  int failures = 0;
  std::vector<double> connect_ms, rtt_us;
  // One phase on its own connection to guest `port`: its CONNECT time counts, a refused one is a
  // failure.
  auto on_port = [&](int port, auto phase) {
    double ms;
    carapace::UniqueFd fd = vsock_connect(uds, port, &ms);
    if (!fd.valid()) {
      ++failures;
      return;
    }
    connect_ms.push_back(ms);
    phase(fd.get());
  };
  // Echo round trips: 64 bytes out, 64 back, one at a time.
  on_port(5000, [&](int fd) {
    char msg[64], back[64];
    memset(msg, 'r', sizeof msg);
    for (int i = 0; i < o.rtts; ++i) {
      auto t0 = Clock::now();
      if (write(fd, msg, sizeof msg) != sizeof msg || !read_exact(fd, back, sizeof back)) {
        ++failures;
        break;
      }
      rtt_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
  });
  // Host -> guest: stream `bytes`, shut down, wait for "done N".
  double h2g_mbps = 0;
  on_port(5001, [&](int fd) {
    std::vector<char> chunk(256 * 1024, 'h');
    auto t0 = Clock::now();
    size_t sent = 0;
    while (sent < bytes) {
      ssize_t w = write(fd, chunk.data(), std::min(chunk.size(), bytes - sent));
      if (w <= 0) break;
      sent += static_cast<size_t>(w);
    }
    shutdown(fd, SHUT_WR);
    std::string done = read_line(fd, 10000);
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (done != "done " + std::to_string(bytes) + "\n") {
      fprintf(stderr, "guest_io_bench: sink answered '%s'\n", done.c_str());
      ++failures;
    }
    h2g_mbps = bytes / s / 1e6;
  });
  // Guest -> host: read until EOF.
  double g2h_mbps = 0;
  on_port(5002, [&](int fd) {
    std::vector<char> buf(256 * 1024);
    size_t got = 0;
    auto t0 = Clock::now();
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 20000) <= 0) break;
      ssize_t r = read(fd, buf.data(), buf.size());
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (got != bytes) {
      fprintf(stderr, "guest_io_bench: source sent %zu of %zu bytes\n", got, bytes);
      ++failures;
    }
    g2h_mbps = got / s / 1e6;
  });
  // The guest's last port ends the scenario.
  vsock_connect(uds, 5999, nullptr);
  ProcessResult r = vm.finish(std::chrono::seconds(30));
  if (r.out.find("TESTGUEST PASS vsock-bench") == std::string::npos || r.exit_code != 0) {
    fprintf(stderr, "guest_io_bench: vsock-bench failed:\n%s\n%s\n", r.out.c_str(), r.err.c_str());
    ++failures;
  }
  printf("vsock: vsock-bench through the guest driver and the VMM's Unix socket (hybrid vsock)\n");
  printf("  CONNECT -> OK         median %8.3f ms (%zu connections)\n", median(connect_ms),
         connect_ms.size());
  printf("  echo round trip 64 B  median %8.1f us, p99 %8.1f us (%zu round trips)\n",
         median(rtt_us), percentile(rtt_us, 0.99), rtt_us.size());
  printf("  host -> guest stream  %8.1f MB/s (%d MiB)\n", h2g_mbps, o.mib);
  printf("  guest -> host stream  %8.1f MB/s (%d MiB)\n", g2h_mbps, o.mib);
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.carapace = build_path(argv[0], "carapace");
  o.guest = build_path(argv[0], "guest/testguest");
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return flag_value("guest_io_bench", argc, argv, &i); };
    if (a == "--runs")
      o.runs = std::max(1, atoi(next().c_str()));
    else if (a == "--ms")
      o.ms = std::max(10, atoi(next().c_str()));
    else if (a == "--mib")
      o.mib = std::max(1, atoi(next().c_str()));
    else if (a == "--rtts")
      o.rtts = std::max(1, atoi(next().c_str()));
    else if (a == "--carapace")
      o.carapace = next();
    else if (a == "--guest")
      o.guest = next();
    else if (a == "--only")
      o.only = next();
    else if (a == "--no-event-idx")
      o.event_idx = false;
    else {
      fprintf(stderr,
              "usage: guest_io_bench [--runs N] [--ms MS] [--mib MIB] [--rtts N] "
              "[--carapace PATH] [--guest PATH] [--only blk|vsock] [--no-event-idx]\n");
      return 2;
    }
  }
  char tmpl[] = "/tmp/carapace-bench-XXXXXX";
  if (!mkdtemp(tmpl)) {
    perror("mkdtemp");
    return 1;
  }
  const std::string dir = tmpl;
  int rc = 0;
  if (o.only.empty() || o.only == "blk") rc |= bench_block(o, dir);
  if (o.only.empty() || o.only == "vsock") rc |= bench_vsock(o, dir);
  rmdir(dir.c_str());
  return rc;
}
