#!/usr/bin/python3
"""Workspace-mount I/O in a real guest: carapace's virtio-fs vs virtio-blk, and vs QEMU's 9p.

    tools/nested-kvm -- bench/nested_fs.py --carapace build/carapace --guest-dir build/guest
                                           [--rounds 3] [--mib 256] [--files 10000] [--batch 1000]
                                           [--mem 1024]

The guest dir holds vmlinux (built with kernel-config/microvm-x86_64.config, which has 9p for the
peer) and rootfs.ext4. Meant to run inside tools/nested-kvm's L1 like bench/nested_boot.py (the
folders and images live under TMPDIR, /scratch there: ext4 on a disk); it runs the same on any
VMX/SVM host. Interleaved rounds, each booting the real kernel + read-only rootfs + agent (PID 1):
  - carapace (`carapace run`): a virtio-fs share of a fresh host folder (`--fs
    tag=bench,path=DIR,mode=rw`, guest `mount -t virtiofs bench /mnt/fs`) and a second virtio-blk
    drive, a fresh ext4 image (`--drive path=IMG`, guest `mount /dev/vdX /mnt/blk`);
  - QEMU (`qemu-system-x86_64 -M microvm -accel kvm`, vhost-vsock): a 9p share of a fresh host
    folder (`-fsdev local,security_model=none -device virtio-9p-device`, guest `mount -t 9p -o
    trans=virtio,version=9p2000.L,msize=512000 bench /mnt/fs`).
On each mount, through the agent over vsock, a python3 workload: sequential write of a --mib MiB
file in 1 MiB writes, fsync included (MB/s); the guest's caches dropped (`echo 3 >
/proc/sys/vm/drop_caches`; the host's page cache stays warm for every path alike) and the file
read back in 1 MiB reads (MB/s); metadata: --files empty files, --batch at a time created, then
each stat'ed, then each unlinked (ops/s, three ops a file; and each op's files/s). Prints each
round, the medians per path and the ratios virtio-fs/virtio-blk (carapace, same guest) and
carapace virtio-fs/QEMU 9p. The absolute figures under emulated SVM say nothing of hardware speed;
the ratios on the same emulated hardware are the comparison. Any failure: one line
`nested_fs: FAIL: ...` and exit status 1.
"""

import argparse
import base64
import itertools
import json
import os
import resource
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
BLK_IMAGE_BYTES = 1 << 30

# The guest side: one phase per exec, one JSON line out.
WORKLOAD = r"""
import json, os, sys, time
phase, root, mib, files = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
path = os.path.join(root, "seq.bin")
chunk = 1 << 20
if phase == "write":
    buf = os.urandom(chunk)
    t0 = time.monotonic()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for _ in range(mib):
        if os.write(fd, buf) != chunk:
            sys.exit("short write")
    os.fsync(fd)
    os.close(fd)
    dt = time.monotonic() - t0
    print(json.dumps({"mbs": mib * chunk / 1e6 / dt}))
elif phase == "read":
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    t0 = time.monotonic()
    fd = os.open(path, os.O_RDONLY)
    total = 0
    while True:
        b = os.read(fd, chunk)
        if not b:
            break
        total += len(b)
    os.close(fd)
    dt = time.monotonic() - t0
    os.unlink(path)
    if total != mib * chunk:
        sys.exit(f"read {total} bytes, wrote {mib * chunk}")
    print(json.dumps({"mbs": total / 1e6 / dt}))
elif phase == "meta":
    batch = int(sys.argv[5])
    d = os.path.join(root, "meta")
    os.mkdir(d)
    spent = {"create": 0.0, "stat": 0.0, "unlink": 0.0}
    for start in range(0, files, batch):
        names = [os.path.join(d, f"f{i:05d}") for i in range(start, min(files, start + batch))]
        t0 = time.monotonic()
        for n in names:
            os.close(os.open(n, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        t1 = time.monotonic()
        for n in names:
            os.stat(n)
        t2 = time.monotonic()
        for n in names:
            os.unlink(n)
        t3 = time.monotonic()
        spent["create"] += t1 - t0
        spent["stat"] += t2 - t1
        spent["unlink"] += t3 - t2
    os.rmdir(d)
    res = {k: files / v for k, v in spent.items()}
    res["ops"] = 3 * files / sum(spent.values())
    print(json.dumps(res))
"""


def raise_nofile():
    """Both VMMs get the open-file limit a service would (soft = hard): a share's server holds
    a host fd per inode the guest holds looked up (carapace: an O_PATH fd each), and L1's
    default soft limit of 1024 is below carapace's own table bound (max_inodes 4096)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Failure(Exception):
    pass


def fail(msg):
    raise Failure(msg)


class Console:
    """Reads a process's stdout in a thread and notes when a line first contains `READY`."""

    def __init__(self, proc):
        self.ready = False
        self.lines = []
        self.event = threading.Event()
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc):
        for line in proc.stdout:
            self.lines.append(line)
            if not self.ready and READY in line:
                self.ready = True
                self.event.set()
        self.event.set()

    def tail(self):
        return b"".join(self.lines[-30:]).decode(errors="replace")

    def wait(self, timeout, what):
        if not self.event.wait(timeout) or not self.ready:
            fail(f"{what}: no '{READY.decode()}' within {timeout} s:\n{self.tail()}")


def frame(obj):
    data = json.dumps(obj).encode()
    return struct.pack("<I", len(data)) + data


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise OSError("closed")
        buf += chunk
    return buf


def read_frame(s):
    (n,) = struct.unpack("<I", recv_exact(s, 4))
    return json.loads(recv_exact(s, n))


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


class Guest:
    """A booted VM process with its agent reachable through `connect`."""

    def __init__(self, name, proc, connect, token):
        self.name = name
        self.proc = proc
        self.connect = connect
        self.token = token
        self.ids = itertools.count(1)
        self.console = Console(proc)

    def wait_agent(self, timeout):
        self.console.wait(timeout, f"{self.name} boot")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                fail(f"{self.name}: the VM process exited with {self.proc.returncode}:\n"
                     f"{self.console.tail()}")
            try:
                s = self.connect()
                try:
                    s.sendall(frame({"id": 0, "op": "ping"}))
                    if "error" not in read_frame(s):
                        return
                finally:
                    s.close()
            except OSError:
                pass
            time.sleep(0.05)
        fail(f"{self.name}: the agent did not answer a ping within 120 s")

    def exec(self, argv, stdin=b"", timeout_s=900):
        """Runs argv in the guest; returns stdout; fails on a non-zero exit."""
        try:
            s = self.connect()
        except OSError as e:
            fail(f"{self.name}: connecting to the agent: {e}")
        try:
            s.settimeout(timeout_s + 30)
            s.sendall(frame({"id": next(self.ids), "op": "exec", "token": self.token,
                             "argv": argv, "stdin": base64.b64encode(stdin).decode(),
                             "timeout_ms": timeout_s * 1000}))
            out, err = b"", b""
            while True:
                f = read_frame(s)
                if "error" in f:
                    fail(f"{self.name}: exec {argv[:3]}: {f['error']}")
                if "stream" in f:
                    data = base64.b64decode(f["data"])
                    if f["stream"] == "stdout":
                        out += data
                    else:
                        err += data
                    continue
                if f.get("exit_code") != 0:
                    fail(f"{self.name}: `{' '.join(argv)[:120]}` ended {f}: "
                         f"{err.decode(errors='replace').strip()[-500:]}")
                return out.decode()
        except (OSError, ValueError) as e:
            fail(f"{self.name}: exec {argv[:3]}: {e}")
        finally:
            s.close()

    def sh(self, cmd):
        return self.exec(["/bin/sh", "-c", cmd], timeout_s=120)

    def workload(self, mount, mib, files, batch):
        res = {}
        for phase in ("write", "read", "meta"):
            out = self.exec(["python3", "-c", WORKLOAD, phase, mount, str(mib), str(files),
                             str(batch)])
            try:
                res[phase] = json.loads(out.strip().splitlines()[-1])
            except (ValueError, IndexError):
                fail(f"{self.name}: {phase} on {mount}: unreadable output {out[-200:]!r}")
        return {"write": res["write"]["mbs"], "read": res["read"]["mbs"],
                "meta": res["meta"]["ops"], "create": res["meta"]["create"],
                "stat": res["meta"]["stat"], "unlink": res["meta"]["unlink"]}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Bench:
    def __init__(self, args):
        self.args = args
        self.exe = os.path.abspath(args.carapace)
        self.kernel = os.path.join(args.guest_dir, "vmlinux")
        self.rootfs = os.path.join(args.guest_dir, "rootfs.ext4")
        self.mem = str(args.mem)
        self.qemu = shutil.which("qemu-system-x86_64")
        self.mkfs = shutil.which("mkfs.ext4") or "/usr/sbin/mkfs.ext4"
        for p in (self.exe, self.kernel, self.rootfs, self.qemu, self.mkfs, "/dev/kvm"):
            if not p or not os.path.exists(p):
                fail(f"prerequisite missing: {p}")
        if not os.path.exists("/dev/vhost-vsock"):
            fail("/dev/vhost-vsock is missing (modprobe vhost_vsock): QEMU's guest needs a vsock")
        config = os.path.join(args.guest_dir, "vmlinux.config")
        if os.path.exists(config):
            with open(config) as f:
                text = f.read()
            for opt in ("CONFIG_VIRTIO_FS=y", "CONFIG_NET_9P_VIRTIO=y", "CONFIG_9P_FS=y"):
                if opt not in text.split("\n"):
                    fail(f"{config} lacks {opt} (rebuild with tools/build-kernel)")
        self.dir = tempfile.mkdtemp(prefix="carapace-nested-fs-")
        self.token = secrets.token_hex(16)
        self.cmdline = f"{BOOT} carapace.token={self.token}"
        self.cid = 100
        self.guests = []

    def fresh_dir(self, name):
        d = os.path.join(self.dir, name)
        shutil.rmtree(d, ignore_errors=True)
        os.mkdir(d)
        return d

    def fresh_image(self, name):
        img = os.path.join(self.dir, name)
        with open(img, "wb") as f:
            f.truncate(BLK_IMAGE_BYTES)
        r = subprocess.run([self.mkfs, "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0",
                            img], capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"mkfs.ext4 {img}: {r.stderr.strip()}")
        return img

    def start(self, name, argv, connect):
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, preexec_fn=raise_nofile)
        g = Guest(name, proc, connect, self.token)
        self.guests.append(g)
        g.wait_agent(600)
        return g

    def finish(self, g):
        g.stop()
        self.guests.remove(g)

    def carapace_round(self):
        share = self.fresh_dir("c-share")
        img = self.fresh_image("c-blk.ext4")
        uds = os.path.join(self.dir, "c.vsock")
        if os.path.exists(uds):
            os.unlink(uds)
        argv = [self.exe, "run", "--kernel", self.kernel, "--mem", self.mem, "--cmdline",
                self.cmdline, "--console", "stdio",
                "--drive", f"path={self.rootfs},ro=on", "--drive", f"path={img}",
                "--vsock", f"cid=3,uds={uds}", "--rng",
                "--fs", f"tag=bench,path={share},mode=rw"]
        g = self.start("carapace", argv, connect_hybrid(uds))
        # The drive is found by its size: the guest names its disks in probe order.
        g.sh("set -e; mkdir -p /mnt/fs /mnt/blk; mount -t virtiofs bench /mnt/fs; "
             f"dev=$(for d in /sys/block/vd*; do [ $(cat $d/size) -eq {BLK_IMAGE_BYTES // 512} ]"
             " && echo /dev/${d##*/}; done | head -n1); [ -n \"$dev\" ]; mount \"$dev\" /mnt/blk")
        fs = g.workload("/mnt/fs", self.args.mib, self.args.files, self.args.batch)
        blk = g.workload("/mnt/blk", self.args.mib, self.args.files, self.args.batch)
        g.sh("umount /mnt/fs; umount /mnt/blk")
        self.finish(g)
        if os.listdir(share):
            fail(f"carapace: the share {share} is not empty after the workload: "
                 f"{os.listdir(share)[:5]}")
        return fs, blk

    def qemu_round(self):
        share = self.fresh_dir("q-share")
        self.cid += 1
        argv = [self.qemu, "-M", "microvm,acpi=off,x-option-roms=off,rtc=off", "-accel", "kvm",
                "-cpu", "host", "-m", self.mem, "-smp", "1", "-nodefaults", "-no-user-config",
                "-display", "none", "-serial", "stdio", "-kernel", self.kernel,
                "-append", self.cmdline,
                "-drive", f"id=root,file={self.rootfs},format=raw,if=none,readonly=on",
                "-device", "virtio-blk-device,drive=root",
                "-device", f"vhost-vsock-device,guest-cid={self.cid}",
                "-device", "virtio-rng-device",
                "-fsdev", f"local,id=f0,path={share},security_model=none",
                "-device", "virtio-9p-device,fsdev=f0,mount_tag=bench"]
        g = self.start("QEMU", argv, connect_vsock(self.cid))
        g.sh("set -e; mkdir -p /mnt/fs; "
             "mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 bench /mnt/fs")
        fs = g.workload("/mnt/fs", self.args.mib, self.args.files, self.args.batch)
        g.sh("umount /mnt/fs")
        self.finish(g)
        return fs

    def run(self):
        rounds = self.args.rounds
        res = {k: [] for k in ("c_fs", "c_blk", "q_9p")}
        for r in range(rounds):
            t0 = time.monotonic()
            c_fs, c_blk = self.carapace_round()
            q_9p = self.qemu_round()
            res["c_fs"].append(c_fs)
            res["c_blk"].append(c_blk)
            res["q_9p"].append(q_9p)
            print(f"  round {r + 1} ({time.monotonic() - t0:.0f} s): write/read MB/s, metadata "
                  f"ops/s: carapace virtio-fs {c_fs['write']:.1f}/{c_fs['read']:.1f}/"
                  f"{c_fs['meta']:.0f}, virtio-blk {c_blk['write']:.1f}/{c_blk['read']:.1f}/"
                  f"{c_blk['meta']:.0f}; QEMU 9p {q_9p['write']:.1f}/{q_9p['read']:.1f}/"
                  f"{q_9p['meta']:.0f}", flush=True)
        metrics = ("write", "read", "meta", "create", "stat", "unlink")
        med = {k: {m: statistics.median(x[m] for x in v) for m in metrics}
               for k, v in res.items()}
        print(f"nested fs bench ({rounds} rounds, {self.args.mib} MiB file, {self.args.files} "
              f"files, {self.mem} MiB guest, medians, emulated SVM: ratios only are meaningful)")
        rows = (("seq write MB/s (fsync)", "write", "{:10.1f}"),
                ("seq read MB/s (cold guest)", "read", "{:10.1f}"),
                ("create+stat+unlink ops/s", "meta", "{:10.0f}"),
                ("  create files/s", "create", "{:10.0f}"),
                ("  stat files/s", "stat", "{:10.0f}"),
                ("  unlink files/s", "unlink", "{:10.0f}"))
        print(f"  {'':<28}{'carapace fs':>12}{'carapace blk':>13}{'QEMU 9p':>10}"
              f"{'fs/blk':>9}{'fs/9p':>9}")
        for label, m, fmt in rows:
            c, b, q = med["c_fs"][m], med["c_blk"][m], med["q_9p"][m]
            print(f"  {label:<28}{fmt.format(c):>12}{fmt.format(b):>13}{fmt.format(q):>10}"
                  f"{c / b:9.3f}{c / q:9.3f}")

    def cleanup(self):
        for g in list(self.guests):
            g.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--carapace", required=True)
    ap.add_argument("--guest-dir", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mib", type=int, default=256, help="size of the sequential file")
    ap.add_argument("--files", type=int, default=10000, help="files of the metadata phase")
    ap.add_argument("--batch", type=int, default=1000,
                    help="files created, then stat'ed, then unlinked at a time (carapace's "
                         "share holds at most 4096 looked-up inodes)")
    ap.add_argument("--mem", type=int, default=1024, help="guest RAM, MiB")
    args = ap.parse_args()
    bench = None
    try:
        bench = Bench(args)
        bench.run()
    except Failure as e:
        print(f"nested_fs: FAIL: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
    except KeyboardInterrupt:
        print("nested_fs: FAIL: interrupted", file=sys.stderr, flush=True)
        sys.exit(1)
    finally:
        if bench:
            bench.cleanup()


if __name__ == "__main__":
    main()
