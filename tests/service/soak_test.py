#!/usr/bin/python3
"""Soak (label `slow`): many sandbox lifecycles through a real `carapace serve`, 8 clients at a
time, then proof that nothing leaked and that the daemon did not slow down.

    CARAPACE_EXE=build/carapace CARAPACE_ROOTFS=... CARAPACE_TESTGUEST=... soak_test.py

  process back end:  CARAPACE_SOAK_PROCESS_CYCLES (default 5000) x create -> exec -> put -> get
                     -> destroy, on the real rootfs;
  microvm back end:  CARAPACE_SOAK_MICROVM_CYCLES (default 1000) x create (a pooled restore of the
                     test guest's snapshot, with a restore notice) -> ping through the agent
                     (GET /sandboxes/ID checks it) -> destroy. The test guest's agent knows no exec
                     or files, so this back end's cycle is its lifecycle.
Before and after each run (once the daemon has settled) it counts the daemon's open fds, its
threads, its children, processes running under the jail's uid range, cgroups under carapace/,
entries in the state dir and sockets: each must be back where it was, and the daemon's RSS may
not grow by 16 MiB. The p99 latency of the last 500 cycles must stay within 1.5x
that of the first 500. Prints the counts and figures; any failed request fails the test.
"""

import concurrent.futures
import os
import statistics
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import daemon_harness as dh  # noqa: E402
from daemon_harness import cc  # noqa: E402

CLIENTS = 8
RSS_GROWTH_KIB = 16 * 1024
WINDOW = int(os.environ.get("CARAPACE_SOAK_WINDOW", 500))  # smaller only for trial runs
# Host uids of jailed VMMs (260000-319999, docs/api.md "Jailed VMMs") and of process sandboxes
# (derived from 200000 up, process_sandbox/process_sandbox.h).
SANDBOX_UIDS = range(200000, 320000)


def env_int(name, default):
    return int(os.environ.get(name, default))


def p99(values):
    return statistics.quantiles(values, n=100)[98]


def say(msg):
    print(f"soak: {msg}", flush=True)


class Census:
    """What the daemon holds on the host, counted from /proc, /sys/fs/cgroup and the state dir."""

    def __init__(self, daemon):
        self.daemon = daemon
        self.foreign = self.sandbox_uid_set()  # before this census: not this test's

    def children(self, pid):
        out = []
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:  # gone meanwhile
            return out
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    out += [int(c) for c in f.read().split()]
            except OSError:
                pass
        return out

    def descendants(self, pid):
        seen, todo = [], self.children(pid)
        while todo:
            p = todo.pop()
            seen.append(p)
            todo += self.children(p)
        return seen

    @staticmethod
    def sandbox_uid_set():
        """(pid, start time) of every process running as a sandbox uid, host-wide."""
        out = set()
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                if os.stat(f"/proc/{p}").st_uid in SANDBOX_UIDS:
                    with open(f"/proc/{p}/stat") as f:
                        out.add((int(p), f.read().rsplit(")", 1)[1].split()[19]))
            except (OSError, IndexError):
                pass
        return out

    def sandbox_uid_processes(self):
        """Processes as sandbox uids that were not there when the census began: what another
        test's sandboxes or VMMs were still ending then may go away meanwhile, and is not ours;
        a process of ours left behind is counted even if one of theirs ended."""
        return len(self.sandbox_uid_set() - self.foreign)

    @staticmethod
    def carapace_cgroups():
        """Cgroups below the `carapace` folder of every mounted hierarchy (v1 or v2)."""
        return sum(1 for p in Census.cgroup_paths())

    @staticmethod
    def cgroup_paths():
        for base, dirs, _ in os.walk("/sys/fs/cgroup"):
            if "/carapace/" in base + "/":
                yield from (os.path.join(base, d) for d in dirs)

    def state_entries(self):
        n, socks = 0, 0
        for base, dirs, files in os.walk(self.daemon.state):
            n += len(dirs) + len(files)
            socks += sum(1 for f in files if f.endswith(".sock") or "vsock" in f)
        return n, socks

    def paths(self):
        """The cgroups and state-dir paths themselves, to name what a leak left."""
        out = set(self.cgroup_paths())
        for base, dirs, files in os.walk(self.daemon.state):
            out.update(os.path.join(base, f) for f in dirs + files)
        return out

    def rss_kib(self):
        try:
            with open(f"/proc/{self.daemon.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return -1

    def take(self):
        pid = self.daemon.proc.pid
        entries, socks = self.state_entries()
        return {
            "fds": len(os.listdir(f"/proc/{pid}/fd")) if self.daemon.proc.poll() is None else -1,
            "threads": len(os.listdir(f"/proc/{pid}/task")),
            "descendants": len(self.descendants(pid)),
            "sandbox_uid_processes": self.sandbox_uid_processes(),
            "cgroups": self.carapace_cgroups(),
            "state_entries": entries,
            "sockets": socks,
        }

    def stable(self, seconds=30):
        """The census once two takes a second apart agree."""
        deadline = time.monotonic() + seconds * dh.TIMEOUT_SCALE
        last = self.take()
        while time.monotonic() < deadline:
            time.sleep(1)
            now = self.take()
            if now == last:
                return now
            last = now
        return last

    def settled(self, baseline, seconds=60):
        """Polls until every count is back at `baseline` (a destroyed sandbox's supervisor may
        still be removing its jail), or returns the last census after `seconds`."""
        deadline = time.monotonic() + seconds * dh.TIMEOUT_SCALE
        while True:
            now = self.take()
            if now == baseline or time.monotonic() > deadline:
                return now
            time.sleep(0.5)


class SoakBase(dh.DaemonTestCase):
    """One daemon and one template (dh.DaemonTestCase's TEMPLATE) per back end."""

    CYCLES_ENV = None
    DEFAULT_CYCLES = 0

    def cycle(self, i):
        """One sandbox's whole life: created, exercised by the back end's check, killed."""
        sb = cc.Sandbox.create(self.tpl.id, timeout=120, client=self.daemon.client)
        try:
            self.exercise(sb, i)
        finally:
            sb.kill()

    def exercise(self, sb, i):
        raise NotImplementedError

    def run_soak(self, what):
        cycles = env_int(self.CYCLES_ENV, self.DEFAULT_CYCLES)
        self.assertGreaterEqual(cycles, 2 * WINDOW, f"{self.CYCLES_ENV} below {2 * WINDOW}")
        census = Census(self.daemon)
        # One warm-up cycle: lazily made things (a pool's first instance, thread pools) are
        # not leaks.
        self.cycle(-1)
        baseline = census.stable()
        rss_before = census.rss_kib()
        latencies = [None] * cycles
        failures = []
        lock = threading.Lock()

        def one(i):
            t0 = time.monotonic()
            try:
                self.cycle(i)
            except Exception as e:  # every failure is reported, the run goes on
                with lock:
                    failures.append(f"cycle {i}: {type(e).__name__}: {e}")
            latencies[i] = time.monotonic() - t0

        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            list(pool.map(one, range(cycles)))
        wall = time.monotonic() - t0
        after = census.settled(baseline)
        rss_after = census.rss_kib()
        first, last = p99(latencies[:WINDOW]), p99(latencies[-WINDOW:])
        say(f"{what}: {cycles} cycles, {CLIENTS} clients, {wall:.1f} s "
            f"({cycles / wall:.1f} cycles/s), {len(failures)} failed")
        say(f"{what}: p99 first {WINDOW} {1000 * first:.1f} ms, last {WINDOW} "
            f"{1000 * last:.1f} ms (ratio {last / first:.2f}); median "
            f"{1000 * statistics.median(latencies):.1f} ms")
        for k in baseline:
            say(f"{what}: {k:20} before {baseline[k]:6}  after {after[k]:6}")
        say(f"{what}: daemon RSS before {rss_before} KiB, after {rss_after} KiB")
        self.assertEqual(failures[:10], [], f"{len(failures)} cycles failed")
        leaks = {k: (baseline[k], after[k]) for k in baseline if after[k] != baseline[k]}
        self.assertEqual(leaks, {}, "counts not back where they were (before, after)")
        self.assertEqual(cc.Sandbox.list(client=self.daemon.client), [])
        # Memory: the allocator keeps some of what the peak load used; a leak of even 4 KiB per
        # cycle would pass this bound over 5,000 cycles.
        self.assertLess(rss_after - rss_before, RSS_GROWTH_KIB,
                        f"the daemon grew by {rss_after - rss_before} KiB over {cycles} cycles")
        self.assertLessEqual(last, 1.5 * first,
                             f"p99 of the last {WINDOW} cycles is {last / first:.2f}x the first's")


class ProcessSoak(SoakBase):
    TEMPLATE = "process_template"
    CYCLES_ENV = "CARAPACE_SOAK_PROCESS_CYCLES"
    DEFAULT_CYCLES = 5000

    def exercise(self, sb, i):
        r = sb.exec(["echo", f"cycle {i}"], timeout=60)
        if (r.exit_code, r.stdout) != (0, f"cycle {i}\n"):
            raise AssertionError(f"exec said {r.exit_code} {r.stdout!r} {r.stderr!r}")
        data = os.urandom(4096)
        sb.files.write("soak.bin", data)
        if sb.files.read("soak.bin") != data:
            raise AssertionError("the file read back differs")

    def test_process_soak(self):
        self.run_soak("process")


class MicrovmSoak(SoakBase):
    TEMPLATE = "testguest_template"
    CYCLES_ENV = "CARAPACE_SOAK_MICROVM_CYCLES"
    DEFAULT_CYCLES = 1000

    def exercise(self, sb, i):
        state = sb.refresh().get("state")
        if state != "running":
            raise AssertionError(f"sandbox {sb.id} is {state}")

    def test_microvm_soak(self):
        self.run_soak("microvm")


if __name__ == "__main__":
    unittest.main(verbosity=2)
