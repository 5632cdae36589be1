// build/bench/restore: how fast carapace starts a sandbox without booting it, next to
// QEMU's restore of the same test guest in the same run.
//
// The test guest's `idle` scenario (RAM filled with a pattern, CPU parked in hlt) is booted, paused
// and frozen: its RAM is written to a sparse memory file, as a snapshot's memory file, and kept as
// a sealed memfd for fork. Then, for 256 MiB and 2 GiB guests:
//   restore    request -> vCPUs running: map the memory file MAP_PRIVATE, rebuild the VM, apply the
//              state, start the vCPU threads (Machine::restore + start); p50/p99
//   restores/s restore + start in a loop for a second, the VMs torn down on another thread
//   hand-out   VmPool::acquire() from a full pool (resume a pre-restored VM); p50/p99
//   fork       pause a running VM, copy its RAM to a memfd, resume it, start one child; p50
//   PSS/clone  100 idle clones (256 MiB only): growth of this process's PSS and of the host's used
//              memory, divided by the number of clones
// and QEMU microvm: boot, `migrate` to a file, then `-incoming` from it until QMP says running.
//
//   build/bench/restore [--runs N] [--clones N] [--guest PATH] [--qemu PATH] [--no-qemu]
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "bench/restore_qemu.h"
#include "common/base/log.h"
#include "snapshot/machine_snapshot.h"
#include "snapshot/memory_image.h"
#include "tests/integration/text_file.h"
#include "vmm/machine/machine.h"
#include "vmm/pool/clone_source.h"
#include "vmm/pool/vm_pool.h"

namespace carapace::bench {
namespace {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// kB value of `key` in a /proc file of "Key: N kB" lines.
long proc_kb(const std::string& path, const std::string& key) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(key.size()));
  return -1;
}

MachineConfig idle_config(const std::string& guest, unsigned mem_mib, ConsoleConfig console) {
  MachineConfig c;
  c.kernel_path = guest;
  c.cmdline = "testguest.run=idle testguest.mib=64";
  c.mem_bytes = uint64_t{mem_mib} << 20;
  c.console = std::move(console);
  return c;
}

MachineConfig quiet_clone(const std::string& guest, unsigned mem_mib) {
  return idle_config(guest, mem_mib, ConsoleConfig{ConsoleKind::kNone, "", false});
}

// Destroys VMs on a thread of its own, as a service would: KVM teardown is slow (tens of ms on
// some hosts) and must not sit on the restore path.
class Reaper {
 public:
  Reaper() : thread_([this] { loop(); }) {}
  ~Reaper() {
    {
      std::lock_guard l(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void add(std::unique_ptr<Machine> vm) {
    {
      std::lock_guard l(mu_);
      queue_.push_back(std::move(vm));
    }
    cv_.notify_all();
  }
  void drain() {
    std::unique_lock l(mu_);
    cv_.wait(l, [&] { return queue_.empty() && !busy_; });
  }

 private:
  void loop() {
    std::unique_lock l(mu_);
    for (;;) {
      cv_.wait(l, [&] { return done_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto vm = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      l.unlock();
      vm->stop(VmOutcome::kGuestReset, "benchmark done");
      vm->wait();
      vm.reset();
      l.lock();
      busy_ = false;
      cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Machine>> queue_;
  bool done_ = false;
  bool busy_ = false;
  std::thread thread_;
};

struct Source {
  std::unique_ptr<Machine> parent;  // still running (idle), for fork
  std::shared_ptr<const CloneSource> in_memory;
  std::shared_ptr<CloneSource> from_file;  // the snapshot directory, loaded
  std::string snapshot_dir;
  uint64_t file_bytes_on_disk = 0;
};

Result<Source> make_source(const std::string& guest, unsigned mem_mib, const std::string& dir) {
  Source s;
  const std::string console = dir + "/parent.console";
  s.parent = TRY(Machine::build(idle_config(guest, mem_mib, {ConsoleKind::kFile, console, false})));
  s.parent->start();
  const auto end = Clock::now() + std::chrono::seconds(60);
  while (testing::read_text_file(console).find("idle ready") == std::string::npos) {
    if (Clock::now() > end)
      return make_error("the idle guest never got ready: " + testing::read_text_file(console));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  s.in_memory = TRY(capture_clone_source(*s.parent));
  // A real snapshot directory (state file + sparse memory file), written through the same path as
  // the control API's PUT /snapshot/create, and loaded back as `carapace restore` does.
  s.snapshot_dir = dir + "/snapshot-" + std::to_string(mem_mib);
  MachineSnapshotOptions options;
  options.write.durable = false;  // page cache is enough for a benchmark
  TRY(snapshot_machine(*s.parent, s.snapshot_dir, options));
  MachineSnapshot snap = TRY(load_machine_snapshot(s.snapshot_dir));
  struct stat st {};
  fstat(snap.memory.fd.get(), &st);
  s.file_bytes_on_disk = static_cast<uint64_t>(st.st_blocks) * 512;
  auto file = std::make_shared<CloneSource>();
  file->state = std::move(snap.state);
  file->memory = std::move(snap.memory);
  s.from_file = std::move(file);
  return s;
}

void bench_size(const std::string& guest, unsigned mem_mib, int runs, int clones,
                const std::string& dir, std::vector<double>* restore_out) {
  auto src = make_source(guest, mem_mib, dir);
  if (!src.ok()) {
    printf("  %u MiB: %s\n", mem_mib, src.error().describe().c_str());
    return;
  }
  printf("guest: %u MiB RAM, 64 MiB touched; snapshot memory file %.1f MiB on disk\n", mem_mib,
         static_cast<double>(src->file_bytes_on_disk) / (1 << 20));
  Reaper reaper;

  // Restore latency: request -> vCPUs running.
  std::vector<double> restore_ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    auto vm = restore_clone(*src->from_file, quiet_clone(guest, mem_mib));
    if (!vm.ok()) {
      printf("  restore failed: %s\n", vm.error().describe().c_str());
      return;
    }
    (*vm)->start();
    restore_ms.push_back(ms_since(t0));
    reaper.add(std::move(vm).value());
    reaper.drain();  // measure restores alone, not next to a teardown
  }
  printf("  restore (loaded snapshot -> vCPUs running): p50 %.3f ms  p99 %.3f ms  (%d runs)\n",
         percentile(restore_ms, 0.5), percentile(restore_ms, 0.99), runs);
  // Cold: read and check the state file, open the memory file, then restore (carapace restore).
  std::vector<double> cold_ms;
  for (int i = 0; i < std::max(1, runs / 2); ++i) {
    const auto c0 = Clock::now();
    auto vm = restore_machine_from_snapshot(src->snapshot_dir, quiet_clone(guest, mem_mib));
    if (!vm.ok()) {
      printf("  cold restore failed: %s\n", vm.error().describe().c_str());
      break;
    }
    (*vm)->start();
    cold_ms.push_back(ms_since(c0));
    reaper.add(std::move(vm).value());
    reaper.drain();
  }
  printf(
      "  restore (snapshot directory -> vCPUs running, state file read and checked): p50 %.3f "
      "ms  p99 %.3f ms\n",
      percentile(cold_ms, 0.5), percentile(cold_ms, 0.99));
  if (restore_out != nullptr) *restore_out = restore_ms;

  // Sustained rate, teardown on the reaper thread.
  int count = 0;
  const auto t0 = Clock::now();
  while (ms_since(t0) < 1000) {
    auto vm = restore_clone(*src->from_file, quiet_clone(guest, mem_mib));
    if (!vm.ok()) break;
    (*vm)->start();
    reaper.add(std::move(vm).value());
    ++count;
  }
  const double secs = ms_since(t0) / 1000;
  reaper.drain();
  printf("  restores/s (restore + start, teardown on another thread): %.0f\n", count / secs);

  // Pool hand-out.
  VmPool::Options opts;
  opts.size = 8;
  opts.config_for = [&](uint64_t) { return quiet_clone(guest, mem_mib); };
  auto pool = VmPool::create(src->in_memory, opts);
  if (pool.ok()) {
    std::vector<double> handout_us;
    for (int round = 0; round < 5; ++round) {
      (*pool)->wait_full(std::chrono::seconds(60));
      for (int i = 0; i < 8; ++i) {
        const auto h0 = Clock::now();
        auto vm = (*pool)->acquire();
        handout_us.push_back(ms_since(h0) * 1000);
        if (vm.ok()) reaper.add(std::move(vm).value());
      }
    }
    auto st = (*pool)->stats();
    printf(
        "  pool hand-out: p50 %.1f us  p99 %.1f us  (hits %llu, misses %llu, refill %.2f ms "
        "mean)\n",
        percentile(handout_us, 0.5), percentile(handout_us, 0.99),
        static_cast<unsigned long long>(st.hits), static_cast<unsigned long long>(st.misses),
        st.mean_refill_ms);
    pool->reset();
  }
  reaper.drain();

  // Fork of the running parent.
  std::vector<double> fork_ms;
  for (int i = 0; i < 5; ++i) {
    const auto f0 = Clock::now();
    auto children = fork_machine(*src->parent, {quiet_clone(guest, mem_mib)});
    if (!children.ok()) {
      printf("  fork failed: %s\n", children.error().describe().c_str());
      break;
    }
    fork_ms.push_back(ms_since(f0));
    for (auto& c : *children)
      reaper.add(std::move(c));
    reaper.drain();
  }
  printf("  fork (pause, RAM -> memfd, resume, 1 child running): p50 %.2f ms\n",
         percentile(fork_ms, 0.5));

  if (clones > 0) {
    // Baselines after the teardowns above have settled.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const long pss0 = proc_kb("/proc/self/smaps_rollup", "Pss:");
    const long avail0 = proc_kb("/proc/meminfo", "MemAvailable:");
    std::vector<std::unique_ptr<Machine>> idle;
    for (int i = 0; i < clones; ++i) {
      auto vm = restore_clone(*src->from_file, quiet_clone(guest, mem_mib));
      if (!vm.ok()) {
        printf("  clone %d failed: %s\n", i, vm.error().describe().c_str());
        break;
      }
      (*vm)->start();
      idle.push_back(std::move(vm).value());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const long pss1 = proc_kb("/proc/self/smaps_rollup", "Pss:");
    const long avail1 = proc_kb("/proc/meminfo", "MemAvailable:");
    const double n = static_cast<double>(idle.size());
    const double pss_mib = static_cast<double>(pss1 - pss0) / 1024 / n;
    const double used_mib = static_cast<double>(avail0 - avail1) / 1024 / n;
    printf(
        "  %zu idle clones: PSS %.2f MiB/clone, host memory used %.2f MiB/clone "
        "-> %.0f clones in 4 GiB\n",
        idle.size(), pss_mib, used_mib, 4096 / std::max(pss_mib, used_mib));
    for (auto& vm : idle)
      reaper.add(std::move(vm));
    reaper.drain();
  }
  src->parent->stop(VmOutcome::kGuestReset, "benchmark done");
  src->parent->wait();
}

}  // namespace
}  // namespace carapace::bench

int main(int argc, char** argv) {
  using namespace carapace::bench;
  int runs = 50, clones = 100;
  std::string guest = build_path(argv[0], "guest/testguest");
  std::string qemu = "/usr/bin/qemu-system-x86_64";
  bool with_qemu = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--runs")
      runs = std::max(1, atoi(next().c_str()));
    else if (a == "--clones")
      clones = std::max(0, atoi(next().c_str()));
    else if (a == "--guest")
      guest = next();
    else if (a == "--qemu")
      qemu = next();
    else if (a == "--no-qemu")
      with_qemu = false;
    else {
      fprintf(stderr,
              "usage: restore [--runs N] [--clones N] [--guest PATH] [--qemu PATH] [--no-qemu]\n");
      return 2;
    }
  }
  if (access(guest.c_str(), R_OK) != 0) {
    fprintf(stderr, "restore: test guest not found at %s\n", guest.c_str());
    return 2;
  }
  carapace::set_log_level(getenv("CARAPACE_BENCH_DEBUG") ? carapace::LogLevel::kDebug
                                                         : carapace::LogLevel::kWarn);
  char tmpl[] = "/tmp/carapace-restore-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  const std::string dir = tmpl;

  std::vector<double> ours_256;
  bench_size(guest, 256, runs, clones, dir, &ours_256);
  bench_size(guest, 2048, std::max(1, runs / 5), 0, dir, nullptr);

  if (with_qemu && access(qemu.c_str(), X_OK) == 0) {
    auto q = qemu_restore(qemu, guest, "testguest.run=idle testguest.mib=64", "idle ready", 256,
                          std::max(3, runs / 10), dir);
    if (!q.error.empty()) {
      printf("qemu: %s\n", q.error.c_str());
    } else {
      const double theirs = percentile(q.ms, 0.5);
      const double ours = percentile(ours_256, 0.5);
      printf(
          "qemu microvm -incoming (256 MiB, exec -> running): p50 %.2f ms  p99 %.2f ms  "
          "peak RSS %.1f MiB  (%zu runs)\n",
          theirs, percentile(q.ms, 0.99), q.peak_rss_mib, q.ms.size());
      printf("ratio ours/qemu restore p50: %.4f\n", ours / theirs);
    }
  } else {
    printf("qemu: not run\n");
  }
  std::string cleanup = "rm -rf " + dir;
  return system(cleanup.c_str()) == 0 ? 0 : 1;
}
