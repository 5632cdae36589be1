#!/usr/bin/python3
"""Chaos (label `slow`, root): faults injected into a real `carapace serve` under a load of 8
clients, then proof that every request got an answer and that nothing was left behind.

    CARAPACE_EXE=build/carapace CARAPACE_ROOTFS=... CARAPACE_TESTGUEST=... chaos_test.py

The daemon's state dir is a small ext4 file system of its own (a loop device), with a process
template over the real rootfs and a microvm template of the test guest. While 8 clients loop
create -> exec (process) or status (microvm) -> destroy, a chaos thread, for
CARAPACE_CHAOS_SECONDS (default 60):
  - kill -9 a random process of a live sandbox: a VMM, a jail supervisor, a process sandbox's
    supervisor, init or agent (docs/security.md #30, #31);
  - stops a VMM with SIGSTOP (a stalled guest: requests to it must still get an answer, an error
    within the daemon's timeouts; health checks every second take such a sandbox down);
  - fills the state dir's file system to the last block for a few seconds (only requests that need
    room may fail, with a clean error; docs/security.md #30), then frees it;
  - once, kill -9 the daemon itself, and starts it again on the same state dir: it cleans up
    what the dead one left and reloads the templates.
Every answer must be a success or an error with one of docs/api.md's codes; a client may see a
transport error only while the daemon is down. After the load: every sandbox the daemon lists
is alive, all are destroyed, and the processes, cgroups, jail folders and state entries are back
at their count before the chaos. Prints the faults injected and the outcome counts.
"""

import collections
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import daemon_harness as dh  # noqa: E402
from daemon_harness import cc  # noqa: E402
from soak_test import Census  # noqa: E402

CLIENTS = 8
FS_MIB = 512
CODES = {"bad_request", "not_found", "conflict", "limit", "internal", "unavailable",
         "insufficient_storage", "request_timeout"}
CONFIG = {"health_interval_s": 1, "health_timeout_s": 2}


def say(msg):
    print(f"chaos: {msg}", flush=True)


def run(*argv):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


class LoopFs:
    """A fresh ext4 file system of `mib` MiB mounted at a temporary folder."""

    def __init__(self, mib):
        self.dir = tempfile.mkdtemp(prefix="carapace-chaos-")
        self.image = os.path.join(self.dir, "fs.img")
        self.mnt = os.path.join(self.dir, "mnt")
        os.mkdir(self.mnt)
        with open(self.image, "wb") as f:
            f.truncate(mib << 20)
        run("mkfs.ext4", "-q", "-F", self.image)
        run("mount", "-o", "loop", self.image, self.mnt)

    def fill(self):
        """Writes a file until the file system refuses another byte; returns its path."""
        path = os.path.join(self.mnt, "filler")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for size in (1 << 20, 4096, 1):
                chunk = b"\0" * size
                try:
                    while os.write(fd, chunk) > 0:
                        pass
                except OSError:
                    pass
        finally:
            os.close(fd)
        return path

    def close(self):
        subprocess.run(["umount", "-l", self.mnt], stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


class ChaosDaemon(dh.Daemon):
    """The harness's daemon with its state dir on `fs` and quick health checks."""

    def __init__(self, fs):
        super().__init__()
        self.state = os.path.join(fs.mnt, "state")
        os.environ["CARAPACE_E2E_DAEMON_CONFIG"] = __import__("json").dumps(
            {**__import__("json").loads(os.environ.get("CARAPACE_E2E_DAEMON_CONFIG") or "{}"),
             **CONFIG})

    def restart(self):
        self._log.close()
        self.start()


class Outcomes:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = collections.Counter()
        self.bad = []
        self.daemon_down = threading.Event()

    def note(self, what, exc=None):
        with self.lock:
            if exc is None:
                self.counts[f"{what}: ok"] += 1
            elif isinstance(exc, cc.TransportError) and self.daemon_down.is_set():
                self.counts[f"{what}: daemon down"] += 1
            elif isinstance(exc, cc.CarapaceError) and exc.code in CODES:
                self.counts[f"{what}: {exc.code}"] += 1
            else:
                self.bad.append(f"{what}: {type(exc).__name__}: {exc}")


class ChaosTest(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.fail("needs root (a loop-mounted state dir, jailed VMMs)")
        self.fs = LoopFs(FS_MIB)
        self.daemon = ChaosDaemon(self.fs)
        self.daemon.start()
        # Before any template: at the end, with every sandbox and template gone, the host must
        # be back here.
        self.census = Census(self.daemon)
        self.baseline = self.census.stable()
        self.paths_before = self.census.paths()
        c = self.daemon.client
        self.proc_tpl = cc.Template.create(isolation="process", rootfs=dh.require_env(
            "CARAPACE_ROOTFS"), pool_size=0, name="chaos-p", client=c, timeout=600)
        self.vm_tpl = cc.Template.create(
            isolation="microvm", kernel=dh.require_env("CARAPACE_TESTGUEST"),
            boot_args="testguest.run=agent-ping", mem_mib=64, pool_size=2, name="chaos-vm",
            client=c, timeout=600)

    kinds = set((os.environ.get("CARAPACE_CHAOS_FAULTS") or "kill,stop,full,daemon").split(","))

    def tearDown(self):
        self.daemon.stop()
        self.fs.close()

    # -- the load -------------------------------------------------------------------------------
    def client_loop(self, n, stop, out):
        rng = random.Random(n)
        while not stop.is_set():
            tpl, what = ((self.proc_tpl, "process") if rng.random() < 0.5 else
                         (self.vm_tpl, "microvm"))
            try:
                sb = cc.Sandbox.create(tpl.id, timeout=60, client=self.daemon.client)
            except Exception as e:
                out.note(f"{what} create", e)
                time.sleep(0.2)
                continue
            out.note(f"{what} create")
            try:
                if what == "process":
                    r = sb.exec(["echo", "chaos"], timeout=20)
                    if r.exit_code not in (0, None):  # None: the command was killed
                        raise AssertionError(f"exec exit {r.exit_code} {r.stderr!r}")
                else:
                    sb.refresh()
                out.note(f"{what} use")
            except Exception as e:
                out.note(f"{what} use", e)
            try:
                sb.kill()
                out.note(f"{what} destroy")
            except Exception as e:
                out.note(f"{what} destroy", e)

    # -- the faults -----------------------------------------------------------------------------
    def victims(self):
        """(kind, pid) of every sandbox process below the daemon."""
        census = Census(self.daemon)
        out = []
        for pid in census.descendants(self.daemon.proc.pid):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            name = os.path.basename(argv[0]).decode(errors="replace")
            words = set(argv[1:4])
            if name == "carapace" and b"jail" in words:
                out.append(("jail supervisor", pid))
            elif name == "carapace" and b"restore" in words:
                out.append(("vmm", pid))
            elif name == "carapace" and b"run" in words:
                out.append(("process supervisor", pid))
            elif name in ("carapace-init", "carapace-agent"):
                out.append((name, pid))
        return out

    def chaos(self, seconds, out, faults):
        # CARAPACE_CHAOS_FAULTS: a comma list of kill, stop, full, daemon (default all), to
        # look into one kind at a time.
        kinds = self.kinds
        rng = random.Random(1)
        t_end = time.monotonic() + seconds
        daemon_killed = False
        step = 0
        while time.monotonic() < t_end:
            step += 1
            time.sleep(0.5)
            if (step % 20 == 10 and "daemon" in kinds and not daemon_killed
                    and time.monotonic() > t_end - seconds / 2):
                daemon_killed = True
                out.daemon_down.set()
                self.daemon.proc.kill()
                self.daemon.proc.wait()
                faults["kill -9 daemon"] += 1
                self.daemon.restart()
                out.daemon_down.clear()
                continue
            if step % 20 == 5 and "full" in kinds:
                path = self.fs.fill()
                faults["file system full"] += 1
                time.sleep(3)
                os.unlink(path)
                continue
            victims = self.victims()
            if not victims or not kinds & {"kill", "stop"}:
                continue
            vmms = [v for v in victims if v[0] == "vmm"]
            kind, pid = rng.choice(victims)
            if vmms and "stop" in kinds and (step % 20 == 15 or "kill" not in kinds):
                kind, pid = rng.choice(vmms)
                try:
                    os.kill(pid, signal.SIGSTOP)
                    faults["SIGSTOP vmm"] += 1
                except ProcessLookupError:
                    pass
                continue
            if "kill" not in kinds:
                continue
            try:
                os.kill(pid, signal.SIGKILL)
                faults[f"kill -9 {kind}"] += 1
            except ProcessLookupError:
                pass

    def test_chaos(self):
        census, baseline = self.census, self.baseline
        out = Outcomes()
        faults = collections.Counter()
        stop = threading.Event()
        clients = [threading.Thread(target=self.client_loop, args=(i, stop, out))
                   for i in range(CLIENTS)]
        for t in clients:
            t.start()
        try:
            self.chaos(int(os.environ.get("CARAPACE_CHAOS_SECONDS", 60)), out, faults)
        finally:
            stop.set()
            for t in clients:
                t.join(300 * dh.TIMEOUT_SCALE)
        hung = [t.name for t in clients if t.is_alive()]
        for k, v in sorted(faults.items()):
            say(f"fault {k:24} x{v}")
        for k, v in sorted(out.counts.items()):
            say(f"answer {k:32} x{v}")
        self.assertEqual(hung, [], "clients still waiting for an answer")
        self.assertEqual(out.bad[:10], [], f"{len(out.bad)} answers were not clean")
        wanted = {"kill": "kill -9 ", "stop": "SIGSTOP vmm", "full": "file system full",
                  "daemon": "kill -9 daemon"}
        for kind, prefix in wanted.items():
            if kind in self.kinds:
                self.assertTrue(any(k.startswith(prefix) for k in faults),
                                f"no '{prefix.strip()}' fault was injected")
        self.assertGreater(sum(v for k, v in out.counts.items() if k.endswith(": ok")), 0)

        # Every sandbox listed is alive; then all go, and the counts come back.
        for sb in cc.Sandbox.list(client=self.daemon.client):
            pid = (sb.info.get("backend") or {}).get("pid")
            self.assertTrue(pid and os.path.exists(f"/proc/{pid}"),
                            f"{sb.id} is listed as {sb.info.get('state')} but its pid is gone")
            sb.kill()
        # Stopped VMMs the health check has not reached yet go with their sandboxes.
        self.assertEqual(cc.Sandbox.list(client=self.daemon.client), [])
        for tpl in cc.Template.list(client=self.daemon.client):
            tpl.delete()
        after = census.settled(baseline, seconds=90)
        for k in ("descendants", "sandbox_uid_processes", "cgroups", "state_entries", "sockets"):
            say(f"{k:20} before {baseline[k]:6}  after {after[k]:6}")
        leaks = {k: (baseline[k], after[k]) for k in baseline
                 if k not in ("fds", "threads") and after[k] != baseline[k]}
        left = sorted(p for p in census.paths() - self.paths_before
                      if "/memory/" in p or not p.startswith("/sys/"))
        self.assertEqual(leaks, {}, f"left behind (before, after); {len(left)} new paths: "
                         + " ".join(left[:12]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
