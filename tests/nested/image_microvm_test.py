#!/usr/bin/python3
"""The real image as a carapace microVM on a KVM that runs Linux user space (label `nested`: run
inside tools/nested-kvm's L1, or directly on a VMX/SVM host).

    tests/nested/image_microvm_test.py --carapace build/carapace --guest-dir build/guest
                                       [--scale N] [--keep DIR] [--skip-docgen]

Boots build/guest/vmlinux with build/guest/rootfs.ext4 (read-only root, the agent as PID 1) and a
vsock, then through `carapace agent` and the control API:
  1. boot -> the agent answers ping;
  2. exec: exit statuses, stderr, and stdout streamed (a line printed before a pause arrives
     before the pause ends);
  3. put/get of a 1 MiB binary file, byte-exact;
  4. docgen of the example spec (with its image) in DOCX, PPTX, XLSX and PDF, each read back on
     this side (python-docx, openpyxl, pdftotext via doccheck.py);
  5. PUT /snapshot/create, then `carapace restore --clones 3 --agent-token`: every clone answers
     with its own new token, the old token is refused for exec, the file put before the snapshot
     is in every clone, and a file written in one clone is absent in the others.
Prints each step's time. Fails (never skips) when a prerequisite is missing or the host's KVM
cannot run the guest's user space.
"""

import argparse
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
EXAMPLES = os.path.join(REPO, "guest", "docgen", "examples")
sys.path.insert(0, os.path.join(REPO, "guest", "docgen", "tests"))
sys.path.insert(0, os.path.join(REPO, "clients", "python"))

from carapace_client.transport import UnixHTTPConnection  # noqa: E402

FORMATS = ("docx", "pptx", "xlsx", "pdf")
BOOT = "console=ttyS0 root=/dev/vda ro init=/usr/sbin/carapace-agent reboot=k panic=-1"


class Failure(Exception):
    pass


def say(msg):
    print(f"image_microvm_test: {msg}", flush=True)


class Test:
    def __init__(self, args):
        self.args = args
        self.exe = os.path.abspath(args.carapace)
        self.kernel = os.path.join(args.guest_dir, "vmlinux")
        self.rootfs = os.path.join(args.guest_dir, "rootfs.ext4")
        for path in (self.exe, self.kernel, self.rootfs):
            if not os.path.exists(path):
                raise Failure(f"prerequisite missing: {path}")
        self.dir = args.keep or tempfile.mkdtemp(prefix="carapace-nested-image-")
        os.makedirs(self.dir, exist_ok=True)
        self.procs = []
        self.times = []

    def timed(self, label, fn):
        t0 = time.monotonic()
        result = fn()
        ms = 1000 * (time.monotonic() - t0)
        self.times.append((label, ms))
        say(f"{label:<60} {ms:10.1f} ms")
        return result

    def wait(self, seconds):
        return seconds * self.args.scale

    # -- processes ----------------------------------------------------------------------------
    def spawn(self, argv, log_name):
        log = open(os.path.join(self.dir, log_name), "wb")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)
        proc.log_path = log.name
        self.procs.append(proc)
        return proc

    def tail(self, path, n=3000):
        try:
            with open(path, "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return "(none)"

    def agent(self, uds, token, *op, stdin=None, check=True, timeout=120):
        argv = [self.exe, "agent", "--uds", uds]
        if token:
            argv += ["--token", token]
        argv += list(op)
        r = subprocess.run(argv, input=stdin, capture_output=True,
                           timeout=self.wait(timeout))
        if check and r.returncode != 0:
            raise Failure(f"carapace agent {' '.join(op[:3])} -> {r.returncode}: "
                          f"{r.stderr.decode(errors='replace').strip()}")
        return r

    def exec(self, uds, token, *argv, **kw):
        return self.agent(uds, token, "exec", "--", *argv, **kw)

    def wait_ping(self, uds, proc, what, seconds):
        deadline = time.monotonic() + self.wait(seconds)
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise Failure(f"{what}: the VMM exited with {proc.returncode}:\n"
                              + self.tail(proc.log_path))
            if os.path.exists(uds):
                r = self.agent(uds, None, "--io-timeout-ms", "5000", "ping", check=False,
                               timeout=30)
                if r.returncode == 0:
                    return
            time.sleep(0.2)
        raise Failure(f"{what}: the agent did not answer ping in {self.wait(seconds)} s")

    def api(self, sock, method, target, body=None, timeout=300):
        conn = UnixHTTPConnection(sock, self.wait(timeout))
        conn.request(method, target, body=json.dumps(body) if body is not None else None,
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        if resp.status >= 300:
            raise Failure(f"{method} {target} -> {resp.status}: {data[:300]!r}")
        return json.loads(data) if data else None

    # -- the steps ----------------------------------------------------------------------------
    def boot(self):
        self.token = secrets.token_hex(16)
        self.uds = os.path.join(self.dir, "vm.vsock")
        self.api_sock = os.path.join(self.dir, "vm.api")
        self.console = os.path.join(self.dir, "console.log")
        argv = [self.exe, "run", "--kernel", self.kernel, "--mem", "1024",
                "--cmdline", f"{BOOT} carapace.token={self.token}",
                "--drive", f"path={self.rootfs},ro=on", "--vsock", f"cid=3,uds={self.uds}",
                "--rng", "--api-sock", self.api_sock, "--console", f"file:{self.console}"]
        self.vm = self.spawn(argv, "vmm.log")
        try:
            self.timed("boot -> agent answers ping",
                       lambda: self.wait_ping(self.uds, self.vm, "boot", 300))
        except Failure as e:
            raise Failure(f"{e}\n---- console ----\n{self.tail(self.console)}")

    def exec_checks(self):
        uds, tok = self.uds, self.token
        r = self.timed("exec: uname -a", lambda: self.exec(uds, tok, "uname", "-a"))
        if not r.stdout.startswith(b"Linux"):
            raise Failure(f"uname -a said {r.stdout!r}")
        say(f"  guest: {r.stdout.decode().strip()}")
        r = self.exec(uds, tok, "sh", "-c", "echo out; echo err >&2; exit 7", check=False)
        if (r.returncode, r.stdout, r.stderr) != (7, b"out\n", b"err\n"):
            raise Failure(f"exit status/streams: {r.returncode} {r.stdout!r} {r.stderr!r}")
        r = self.exec(uds, tok, "sh", "-c", "kill -TERM $$", check=False)
        if r.returncode != 128 + 15:
            raise Failure(f"a command killed by SIGTERM gave {r.returncode}, not 143")
        # Streaming: the first line must arrive while the command still sleeps.
        argv = [self.exe, "agent", "--uds", uds, "--token", tok, "exec", "--", "sh", "-c",
                "echo first; sleep 3; echo second"]
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        first = p.stdout.readline()
        t_first = time.monotonic() - t0
        second = p.stdout.readline()
        t_second = time.monotonic() - t0
        p.wait(self.wait(60))
        if (first, second, p.returncode) != (b"first\n", b"second\n", 0):
            raise Failure(f"streamed exec: {first!r} {second!r} rc {p.returncode}")
        if t_second - t_first < 2.5:
            raise Failure(f"stdout was not streamed: lines at {t_first:.2f} s and {t_second:.2f} s")
        say(f"  streamed: first line after {t_first:.2f} s, second after {t_second:.2f} s")

    def file_checks(self):
        blob = secrets.token_bytes(1 << 20)
        local = os.path.join(self.dir, "blob.bin")
        with open(local, "wb") as f:
            f.write(blob)
        self.timed("put 1 MiB binary", lambda: self.agent(self.uds, self.token, "put", local,
                                                          "data/blob.bin", "--parents"))
        back = os.path.join(self.dir, "blob.back")
        self.timed("get 1 MiB binary", lambda: self.agent(self.uds, self.token, "get",
                                                          "data/blob.bin", back))
        with open(back, "rb") as f:
            if f.read() != blob:
                raise Failure("the file read back differs from the one put")
        r = self.exec(self.uds, self.token, "sha256sum", "data/blob.bin")
        if r.stdout.split()[0].decode() != hashlib.sha256(blob).hexdigest():
            raise Failure("the guest's sha256 of the file differs")

    def docgen_checks(self):
        import doccheck
        spec_path = os.path.join(EXAMPLES, "report.json")
        spec = doccheck.load_spec(spec_path)
        self.agent(self.uds, self.token, "put", os.path.join(EXAMPLES, "chart.png"), "chart.png")
        out = os.path.join(self.dir, "docs")
        os.makedirs(out, exist_ok=True)
        for fmt in FORMATS:
            with open(spec_path, "rb") as f:
                spec_bytes = f.read()
            self.timed(f"docgen {fmt} in the guest",
                       lambda: self.agent(self.uds, self.token, "exec", "--stdin", "-", "--",
                                          "docgen", "--spec", "-", "--out", f"report.{fmt}",
                                          stdin=spec_bytes, timeout=600))
            path = os.path.join(out, f"report.{fmt}")
            self.agent(self.uds, self.token, "get", f"report.{fmt}", path)
            try:
                counts = doccheck.check(path, spec)
            except doccheck.CheckError as e:
                raise Failure(f"report.{fmt}: {e}")
            say(f"  report.{fmt}: {os.path.getsize(path)} bytes, checked ({counts})")

    def snapshot_and_clones(self):
        self.exec(self.uds, self.token, "sh", "-c", "echo before-snapshot > marker.txt")
        snap = os.path.join(self.dir, "snap")
        self.timed("PUT /snapshot/create (1 GiB guest)",
                   lambda: self.api(self.api_sock, "PUT", "/snapshot/create", {"dir": snap}))
        self.vm.terminate()
        self.vm.wait(self.wait(60))
        cuds = os.path.join(self.dir, "clone.vsock")
        tok_out = os.path.join(self.dir, "clone.token")
        argv = [self.exe, "restore", "--snapshot", snap, "--clones", "3",
                "--drive", f"path={self.rootfs},ro=on", "--vsock", f"cid=10,uds={cuds}", "--rng",
                "--agent-token", self.token, "--agent-token-out", tok_out,
                "--agent-timeout", str(int(self.wait(10))), "--console", "none"]
        t0 = time.monotonic()
        clones = self.spawn(argv, "restore.log")
        tokens = []
        deadline = time.monotonic() + self.wait(120)
        for i in range(3):
            path = f"{tok_out}.{i}"
            while not (os.path.exists(path) and os.path.getsize(path) > 0):
                if clones.poll() is not None:
                    raise Failure(f"carapace restore exited with {clones.returncode}:\n"
                                  + self.tail(clones.log_path))
                # A clone whose agent did not take the notice is stopped; the others run on.
                if time.monotonic() > deadline or "not delivered" in self.tail(clones.log_path):
                    raise Failure("the clones' new tokens did not appear:\n"
                                  + self.tail(clones.log_path))
                time.sleep(0.05)
            with open(path) as f:
                tokens.append(f.read().strip())
        ms = 1000 * (time.monotonic() - t0)
        self.times.append(("restore --clones 3 -> every restore notice taken", ms))
        say(f"{'restore --clones 3 -> every restore notice taken':<60} {ms:10.1f} ms")
        if len(set(tokens + [self.token])) != 4:
            raise Failure("the clones' tokens are not all new and distinct")
        for i, tok in enumerate(tokens):
            uds = f"{cuds}.{i}"
            r = self.timed(f"clone {i}: exec with its new token",
                           lambda: self.exec(uds, tok, "cat", "marker.txt"))
            if r.stdout != b"before-snapshot\n":
                raise Failure(f"clone {i} lost the file put before the snapshot: {r.stdout!r}")
            old = self.exec(uds, self.token, "true", check=False)
            if old.returncode == 0:
                raise Failure(f"clone {i} ran a command for the snapshot's old token")
            if b"token" not in old.stderr.lower() and b"auth" not in old.stderr.lower():
                raise Failure(f"clone {i}: the old token's refusal does not say why: "
                              f"{old.stderr!r}")
            self.exec(uds, tok, "sh", "-c", f"echo {i} > only-in-clone-{i}")
        for i, tok in enumerate(tokens):
            r = self.exec(f"{cuds}.{i}", tok, "sh", "-c", "ls only-in-clone-* | sort")
            if r.stdout.split() != [f"only-in-clone-{i}".encode()]:
                raise Failure(f"clone {i} sees {r.stdout.split()}: the clones share files")
        say(f"  3 clones: own tokens, old token refused ({old.stderr.decode().strip()}), "
            "files diverge")
        clones.terminate()
        clones.wait(self.wait(60))

    def run(self):
        try:
            self.boot()
            self.exec_checks()
            self.file_checks()
            if not self.args.skip_docgen:
                self.docgen_checks()
            self.snapshot_and_clones()
        finally:
            for p in self.procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            if not self.args.keep:
                shutil.rmtree(self.dir, ignore_errors=True)
        say("PASS")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--carapace", required=True)
    ap.add_argument("--guest-dir", required=True)
    ap.add_argument("--scale", type=float, default=float(os.environ.get(
        "CARAPACE_E2E_TIMEOUT_SCALE", "1")), help="multiplies every wait (emulated hosts)")
    ap.add_argument("--keep", help="keep the work files in DIR")
    ap.add_argument("--skip-docgen", action="store_true",
                    help="leave out step 4 (e.g. for a sanitizer build of carapace: docgen is the "
                         "guest's own Python and costs minutes when emulated)")
    args = ap.parse_args()
    try:
        Test(args).run()
    except Failure as e:
        print(f"image_microvm_test: FAIL: {e}", file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
