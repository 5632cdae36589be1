#!/usr/bin/python3
"""Real-kernel boot and restore, carapace vs QEMU microvm, on the same (nested) KVM.

    tools/nested-kvm -- bench/nested_boot.py --carapace build/carapace --guest-dir build/guest
                                             [--rounds 3] [--mem 512]

Meant to run inside tools/nested-kvm's L1 (kvm_amd on SVM emulated by QEMU TCG), where it is the
one real-kernel comparison with a peer this project can make on hosts without VMX/SVM; it runs
the same on any VMX/SVM host. Interleaved rounds, each:
  - boot: the real kernel + read-only rootfs image + agent (PID 1) + virtio-mmio block, vsock and
    rng, started by `carapace run` and by `qemu-system-x86_64 -M microvm -accel kvm` (PVH entry,
    vhost-vsock), timed from the start of the process to the agent's `carapace-agent: ready`
    line on the serial console and to its first answer to a ping over vsock;
  - restore: a snapshot of that booted guest (carapace: PUT /snapshot/create; QEMU: QMP `migrate`
    to a file), restored by `carapace restore` and by QEMU `-incoming`, timed to the agent's first
    ping answer.
Prints the medians and the ratio carapace/QEMU. The absolute times under emulation say nothing of
hardware speed; the ratio on the same emulated hardware is the comparison.
"""

import argparse
import http.client
import json
import os
import secrets
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

BOOT = "console=ttyS0 root=/dev/vda ro init=/usr/sbin/carapace-agent reboot=k panic=-1"
READY = b"carapace-agent: ready"


def fail(msg):
    print(f"nested_boot: FAIL: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


class Console:
    """Reads a process's stdout in a thread and notes when a line first contains `READY`."""

    def __init__(self, proc, t0):
        self.ready_at = None
        self.lines = []
        self.event = threading.Event()
        threading.Thread(target=self._read, args=(proc, t0), daemon=True).start()

    def _read(self, proc, t0):
        for line in proc.stdout:
            self.lines.append(line)
            if self.ready_at is None and READY in line:
                self.ready_at = time.monotonic() - t0
                self.event.set()
        self.event.set()

    def wait(self, timeout, what):
        if not self.event.wait(timeout) or self.ready_at is None:
            tail = b"".join(self.lines[-30:]).decode(errors="replace")
            fail(f"{what}: no '{READY.decode()}' within {timeout} s:\n{tail}")
        return self.ready_at


def frame(obj):
    data = json.dumps(obj).encode()
    return struct.pack("<I", len(data)) + data


def read_frame(s):
    head = b""
    while len(head) < 4:
        chunk = s.recv(4 - len(head))
        if not chunk:
            raise OSError("closed")
        head += chunk
    (n,) = struct.unpack("<I", head)
    body = b""
    while len(body) < n:
        chunk = s.recv(n - len(body))
        if not chunk:
            raise OSError("closed")
        body += chunk
    return json.loads(body)


def ping_once(connect):
    s = connect()
    try:
        s.settimeout(5)
        s.sendall(frame({"id": 1, "op": "ping"}))
        reply = read_frame(s)
        return "error" not in reply
    finally:
        s.close()


def connect_hybrid(uds):
    """carapace's hybrid vsock: a Unix socket, `CONNECT 52` -> `OK n`."""
    def connect():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(uds)
        s.sendall(b"CONNECT 52\n")
        line = b""
        while not line.endswith(b"\n"):
            c = s.recv(1)
            if not c:
                s.close()
                raise OSError("closed during CONNECT")
            line += c
        if not line.startswith(b"OK"):
            s.close()
            raise OSError(line.decode(errors="replace"))
        return s
    return connect


def connect_vsock(cid):
    def connect():
        s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect((cid, 52))
        return s
    return connect


def wait_ping(connect, proc, t0, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            fail(f"{what}: the process exited with {proc.returncode}")
        try:
            if ping_once(connect):
                return time.monotonic() - t0
        except OSError:
            pass
        time.sleep(0.01)
    fail(f"{what}: the agent did not answer within {timeout} s")


def stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait()


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("vm", timeout=600)
        self.path_ = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path_)


class Qmp:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.s.connect(path)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.f = self.s.makefile("rwb")
        self.f.readline()  # greeting
        self.cmd("qmp_capabilities")

    def cmd(self, name, **args):
        self.f.write(json.dumps({"execute": name, "arguments": args}).encode() + b"\n")
        self.f.flush()
        while True:
            msg = json.loads(self.f.readline())
            if "return" in msg or "error" in msg:
                if "error" in msg:
                    fail(f"QMP {name}: {msg['error']}")
                return msg["return"]


class Bench:
    def __init__(self, args):
        self.exe = os.path.abspath(args.carapace)
        self.kernel = os.path.join(args.guest_dir, "vmlinux")
        self.rootfs = os.path.join(args.guest_dir, "rootfs.ext4")
        self.mem = str(args.mem)
        self.qemu = shutil.which("qemu-system-x86_64")
        for p in (self.exe, self.kernel, self.rootfs, self.qemu, "/dev/kvm"):
            if not p or not os.path.exists(p):
                fail(f"prerequisite missing: {p}")
        if not os.path.exists("/dev/vhost-vsock"):
            fail("/dev/vhost-vsock is missing (modprobe vhost_vsock): QEMU's guest needs a vsock")
        self.dir = tempfile.mkdtemp(prefix="carapace-nested-bench-")
        self.token = secrets.token_hex(16)
        self.cmdline = f"{BOOT} carapace.token={self.token}"
        self.cid = 100

    def carapace_args(self, uds):
        return ["--drive", f"path={self.rootfs},ro=on", "--vsock", f"cid=3,uds={uds}", "--rng"]

    def carapace_boot(self, snapshot):
        uds = os.path.join(self.dir, "c.vsock")
        api = os.path.join(self.dir, "c.api")
        for p in (uds, api):
            if os.path.exists(p):
                os.unlink(p)
        argv = [self.exe, "run", "--kernel", self.kernel, "--mem", self.mem, "--cmdline",
                self.cmdline, "--console", "stdio", "--api-sock", api] + self.carapace_args(uds)
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        ready = Console(proc, t0).wait(600, "carapace boot")
        answered = wait_ping(connect_hybrid(uds), proc, t0, 120, "carapace boot")
        if snapshot:
            shutil.rmtree(snapshot, ignore_errors=True)
            conn = UnixHTTP(api)
            conn.request("PUT", "/snapshot/create", body=json.dumps({"dir": snapshot}),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            body = resp.read()
            if resp.status >= 300:
                fail(f"carapace snapshot: {resp.status} {body[:200]!r}")
        stop(proc)
        return ready, answered

    def carapace_restore(self, snapshot):
        uds = os.path.join(self.dir, "r.vsock")
        if os.path.exists(uds):
            os.unlink(uds)
        argv = [self.exe, "restore", "--snapshot", snapshot, "--console", "none"] + \
            self.carapace_args(uds)
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        answered = wait_ping(connect_hybrid(uds), proc, t0, 120, "carapace restore")
        stop(proc)
        return answered

    def qemu_argv(self, cid, qmp, extra=()):
        return [self.qemu, "-M", "microvm,acpi=off,x-option-roms=off,rtc=off", "-accel", "kvm",
                "-cpu", "host", "-m", self.mem, "-smp", "1", "-nodefaults", "-no-user-config",
                "-display", "none", "-serial", "stdio", "-kernel", self.kernel,
                "-append", self.cmdline,
                "-drive", f"id=root,file={self.rootfs},format=raw,if=none,readonly=on",
                "-device", "virtio-blk-device,drive=root",
                "-device", f"vhost-vsock-device,guest-cid={cid}",
                "-device", "virtio-rng-device", "-qmp", f"unix:{qmp},server=on,wait=off",
                *extra]

    def qemu_boot(self, image):
        self.cid += 1
        cid = self.cid
        qmp = os.path.join(self.dir, f"q{cid}.qmp")
        t0 = time.monotonic()
        proc = subprocess.Popen(self.qemu_argv(cid, qmp), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        ready = Console(proc, t0).wait(600, "QEMU boot")
        answered = wait_ping(connect_vsock(cid), proc, t0, 120, "QEMU boot")
        if image:
            q = Qmp(qmp)
            q.cmd("stop")
            q.cmd("migrate", uri=f"exec:cat > {image}")
            while q.cmd("query-migrate").get("status") not in ("completed", "failed"):
                time.sleep(0.05)
            if q.cmd("query-migrate")["status"] != "completed":
                fail("QEMU migrate to file failed")
        stop(proc)
        return ready, answered, cid

    def qemu_restore(self, image, cid):
        qmp = os.path.join(self.dir, f"r{cid}.qmp")
        t0 = time.monotonic()
        proc = subprocess.Popen(self.qemu_argv(cid, qmp, ["-incoming", f"exec:cat {image}"]),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        # The image was saved with the guest stopped (QMP `stop` first, so it is consistent), so
        # the incoming guest waits paused: `cont` it as soon as the migration stream is in.
        q = Qmp(qmp)
        while q.cmd("query-status")["status"] == "inmigrate":
            time.sleep(0.005)
        q.cmd("cont")
        answered = wait_ping(connect_vsock(cid), proc, t0, 120, "QEMU restore")
        stop(proc)
        return answered

    def run(self, rounds):
        res = {k: [] for k in ("c_ready", "c_ping", "q_ready", "q_ping", "c_restore",
                               "q_restore")}
        snap = os.path.join(self.dir, "snap")
        image = os.path.join(self.dir, "qemu.migration")
        for r in range(rounds):
            first_snapshot = r == 0
            cr, cp = self.carapace_boot(snap if first_snapshot else None)
            qr, qp, cid = self.qemu_boot(image if first_snapshot else None)
            if first_snapshot:
                self.qemu_cid = cid
            res["c_ready"].append(cr)
            res["c_ping"].append(cp)
            res["q_ready"].append(qr)
            res["q_ping"].append(qp)
            res["c_restore"].append(self.carapace_restore(snap))
            res["q_restore"].append(self.qemu_restore(image, self.qemu_cid))
            print(f"  round {r + 1}: boot->ready carapace {cr:6.2f} s, QEMU {qr:6.2f} s; "
                  f"boot->ping {cp:6.2f} / {qp:6.2f} s; restore->ping "
                  f"{res['c_restore'][-1]:6.2f} / {res['q_restore'][-1]:6.2f} s", flush=True)
        med = {k: statistics.median(v) for k, v in res.items()}
        print(f"nested boot bench ({rounds} rounds, {self.mem} MiB guest, medians, "
              "emulated SVM: ratios only are meaningful)")
        for label, c, q in (("boot -> 'carapace-agent: ready'", "c_ready", "q_ready"),
                            ("boot -> agent answers ping", "c_ping", "q_ping"),
                            ("restore -> agent answers ping", "c_restore", "q_restore")):
            print(f"  {label:<34} carapace {med[c]:8.3f} s   QEMU microvm {med[q]:8.3f} s   "
                  f"ratio {med[c] / med[q]:.3f}")
        shutil.rmtree(self.dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--carapace", required=True)
    ap.add_argument("--guest-dir", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mem", type=int, default=512)
    args = ap.parse_args()
    Bench(args).run(args.rounds)


if __name__ == "__main__":
    main()
