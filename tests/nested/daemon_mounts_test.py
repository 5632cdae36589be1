#!/usr/bin/python3
"""Workspace mounts of microVM sandboxes of the real image through `carapace serve` as root (jailed
VMMs; label `nested`: inside tools/nested-kvm's L1, or directly on a VMX/SVM host).

Three host folders under the daemon's one mount root, owned by an ordinary user (uid 1000): a
source tree shared `ro`, an empty folder `rw`, and an output folder `rw-nodelete` holding one file.
A pooled sandbox gets all three at hand-out (the template's snapshot carries unbound virtio-fs
devices; the daemon id-maps each folder into the VM's jail, binds it to a device and the agent
mounts it). Inside, with the real kernel's virtiofs driver:
  - `cp -a` of the source tree into the rw share and back out into the rw-nodelete one;
  - `python3 -m compileall` on the rw share; a git init/commit/clone there; 5,000 files made and
    kept at once (each an open file of the VMM's, within its jail's limit);
  - docgen writing a PDF straight into the rw-nodelete share;
  - every write to the ro share refused, and on rw-nodelete unlink, truncation and rename over an
    existing file refused while creating and appending work;
  - a symlink the host planted in the share resolves in the guest's own tree, never the host's;
  - the files API reaching into a share;
  - the mode matrix (15 operations x ro / rw / rw-nodelete, each errno) in a second sandbox;
  - a fork: refused (409) while a process uses a share; else the child gets the shares read-only
    and the parent has them back, writable.
On the host: the bytes are there, owned by the folders' owner; what was refused left nothing; no
mount ever appeared in the host's mount table; after destroy nothing of the VM is left. Bad mount
requests are 400 and create nothing.

Environment: CARAPACE_EXE, CARAPACE_KERNEL, CARAPACE_ROOTFS (tests/nested/CMakeLists.txt);
CARAPACE_E2E_DAEMON_CONFIG and CARAPACE_E2E_TIMEOUT_SCALE as in tests/service/daemon_harness.py.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "service"))
sys.path.insert(0, HERE)

from daemon_harness import TIMEOUT_SCALE, Daemon, cc  # noqa: E402
from daemon_image_test import diagnostics, timed, vmm_processes  # noqa: E402

EXEC_S = 60 * TIMEOUT_SCALE
OWNER = 1000  # the folders' owner: neither root nor any VM's uid

SPEC = ('{"title": "Straight into the share", "blocks": ['
        '{"type": "paragraph", "text": "docgen wrote this into a rw-nodelete share."}]}')


# Each operation on a share (argv[1]), printed as {"op": "ok" | "EROFS" | ...}: the same
# operations as the process back end's matrix (tests/service/process_mounts_test.cpp).
MATRIX = r"""
import errno, json, os, sys
d = sys.argv[1]
def p(n): return os.path.join(d, n)
def write_at_start():
    fd = os.open(p("existing.txt"), os.O_WRONLY); os.write(fd, b"H"); os.close(fd)
def append():
    fd = os.open(p("existing.txt"), os.O_WRONLY | os.O_APPEND); os.write(fd, b"+\n"); os.close(fd)
def create():
    fd = os.open(p("new.txt"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b"new\n"); os.close(fd)
def open_trunc():
    os.close(os.open(p("otrunc.txt"), os.O_WRONLY | os.O_TRUNC))
ops = {
    "create": create,
    "write": write_at_start,
    "append": append,
    "truncate": lambda: os.truncate(p("trunc.txt"), 0),
    "open_trunc": open_trunc,
    "unlink": lambda: os.unlink(p("victim.txt")),
    "rmdir": lambda: os.rmdir(p("emptydir")),
    "mkdir": lambda: os.mkdir(p("newdir")),
    "rename": lambda: os.rename(p("renameme.txt"), p("renamed.txt")),
    "rename_over": lambda: os.rename(p("src.txt"), p("target.txt")),
    "rename_out": lambda: os.rename(p("outme.txt"), "/tmp/outme.txt"),
    "link": lambda: os.link(p("existing.txt"), p("hardlink.txt")),
    "symlink": lambda: os.symlink("existing.txt", p("symlink.txt")),
    "chmod": lambda: os.chmod(p("chmod.txt"), 0o600),
    "setxattr": lambda: os.setxattr(p("xattr.txt"), "user.carapace", b"1"),
}
out = {}
for name, op in ops.items():
    try:
        op(); out[name] = "ok"
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
st = os.stat(d)
out["owner_inside"] = "%d:%d" % (st.st_uid, st.st_gid)
print(json.dumps(out))
"""
MATRIX_FILES = ("existing.txt", "trunc.txt", "otrunc.txt", "victim.txt", "renameme.txt", "src.txt",
                "target.txt", "outme.txt", "chmod.txt", "xattr.txt")
# What the microvm back end answers (virtio-fs: the guest's ro mount, the host's file server):
# (op, ro, rw, rw-nodelete). User xattrs are not served; rw-nodelete refuses destruction with
# EPERM, allows a rename to a new name, and writes over existing bytes only through the handle
# that created the file (vmm/devices/fs/README.md).
EXPECTED = [
    ("create", "EROFS", "ok", "ok"), ("write", "EROFS", "ok", "EPERM"),
    ("append", "EROFS", "ok", "ok"), ("truncate", "EROFS", "ok", "EPERM"),
    ("open_trunc", "EROFS", "ok", "EPERM"), ("unlink", "EROFS", "ok", "EPERM"),
    ("rmdir", "EROFS", "ok", "EPERM"), ("mkdir", "EROFS", "ok", "ok"),
    ("rename", "EROFS", "ok", "ok"), ("rename_over", "EROFS", "ok", "EPERM"),
    ("rename_out", "EXDEV", "EXDEV", "EXDEV"), ("link", "EROFS", "ok", "ok"),
    ("symlink", "EROFS", "ok", "ok"), ("chmod", "EROFS", "ok", "ok"),
    ("setxattr", "EROFS", "ENOTSUP", "ENOTSUP"),  # EOPNOTSUPP: the same errno on Linux
]


def say(msg):
    print(f"daemon_mounts_test: {msg}", flush=True)


def chown_tree(path, uid):
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, uid)
    os.lchown(path, uid, uid)


def host_mounts_naming(path):
    with open("/proc/self/mountinfo") as f:
        return [line for line in f if path in line]


class DaemonMounts(unittest.TestCase):
    def test_workspace_mounts(self):
        if os.geteuid() != 0:
            self.fail("needs root: jailed VMMs and id-mapped mounts")
        # The mount root is on a real file system (L1's /scratch is ext4): an id-mapped mount of
        # a tmpfs needs Linux 6.3, and L1 runs Debian 12's 6.1.
        self.ws = tempfile.mkdtemp(prefix="carapace-ws-", dir=os.environ.get("TMPDIR", "/var/tmp"))
        self.addCleanup(subprocess.run, ["rm", "-rf", self.ws])
        self.prepare_folders()
        daemon = Daemon(config={"mount_roots": [self.ws]})
        self.addCleanup(daemon.stop)
        daemon.start()
        try:
            self.flow(daemon)
        except BaseException:
            print(diagnostics(daemon), file=sys.stderr, flush=True)
            raise

    def prepare_folders(self):
        ws = self.ws
        self.src, self.rw, self.out = (os.path.join(ws, n) for n in ("src", "rw", "out"))
        pkg = os.path.join(self.src, "proj", "pkg")
        os.makedirs(pkg)
        for name, text in {"__init__.py": "VALUE = 42\n",
                           "mod.py": "from . import VALUE\n\ndef twice():\n    return 2 * VALUE\n",
                           "data.txt": "some data\n"}.items():
            with open(os.path.join(pkg, name), "w") as f:
                f.write(text)
        os.symlink("/etc/hostname", os.path.join(self.src, "proj", "hostname-link"))
        os.makedirs(self.rw)
        os.makedirs(self.out)
        for mode in ("ro", "rw", "rw-nodelete"):
            d = os.path.join(ws, "m-" + mode)
            os.makedirs(os.path.join(d, "emptydir"))
            for name in MATRIX_FILES:
                with open(os.path.join(d, name), "w") as f:
                    f.write(f"keep {name}\n")
        with open(os.path.join(self.out, "keep.txt"), "w") as f:
            f.write("keep me\n")
        chown_tree(ws, OWNER)
        os.chmod(ws, 0o755)

    def flow(self, daemon):
        c = daemon.client
        tpl = timed("POST /templates (boot, agent ready, snapshot)", lambda: cc.Template.create(
            isolation="microvm", kernel=os.environ["CARAPACE_KERNEL"],
            rootfs=os.environ["CARAPACE_ROOTFS"],
            boot_args="console=ttyS0 root=/dev/vda ro init=/usr/sbin/carapace-agent reboot=k "
                      "panic=-1", mem_mib=1024, pool_size=2, name="nested-mounts",
            agent_timeout_s=int(60 * TIMEOUT_SCALE), client=c, timeout=900 * TIMEOUT_SCALE))
        deadline = time.monotonic() + 300 * TIMEOUT_SCALE

        def pool_full():
            while c.json("GET", f"/templates/{tpl.id}")["pool"]["ready"] < 2:
                self.assertLess(time.monotonic(), deadline, "the pool did not fill")
                time.sleep(0.1)
        pool_full()
        # The hand-out's cost without mounts, in this run, next to the one with three below.
        plain = timed("POST /sandboxes without mounts (pool hit)", lambda: cc.Sandbox.create(
            template=tpl.id, timeout=600, client=c))
        self.assertTrue(plain.info.get("from_pool"), plain.info)
        plain.kill()
        pool_full()

        # Bad requests first: 400, nothing made.
        before = {s.id for s in cc.Sandbox.list(client=c)}
        os.symlink(self.rw, os.path.join(self.ws, "link-to-rw"))
        for bad in ([{"host_path": "/etc", "guest_path": "/work/x"}],
                    [{"host_path": os.path.join(self.ws, "link-to-rw"), "guest_path": "/work/x"}],
                    [{"host_path": self.ws + "/rw/../src", "guest_path": "/work/x"}],
                    [{"host_path": self.rw, "guest_path": "/work/x", "mode": "rwx"}]):
            with self.assertRaises(cc.BadRequest, msg=str(bad)):
                c.json("POST", "/sandboxes", {"template": tpl.id, "mounts": bad})
        self.assertEqual({s.id for s in cc.Sandbox.list(client=c)}, before)

        mounts = [{"host_path": self.src, "guest_path": "/work/src", "mode": "ro"},
                  {"host_path": self.rw, "guest_path": "/work/rw", "mode": "rw"},
                  {"host_path": self.out, "guest_path": "/work/out", "mode": "rw-nodelete"}]
        info = timed("POST /sandboxes with 3 mounts (pool hit)", lambda: c.json(
            "POST", "/sandboxes", {"template": tpl.id, "timeout_s": 1800, "mounts": mounts}))
        sb = cc.Sandbox(info, c)
        self.assertTrue(info.get("from_pool"), info)
        self.assertEqual([(m["guest_path"], m["mode"]) for m in info["mounts"]],
                         [(m["guest_path"], m["mode"]) for m in mounts], info)

        def sh(cmd, code=0):
            r = sb.exec(cmd, timeout=EXEC_S)
            self.assertEqual(r.exit_code, code, f"{cmd}\nstdout: {r.stdout}\nstderr: {r.stderr}")
            return r

        r = sh("grep virtiofs /proc/mounts | cut -d' ' -f2-4 | sort")
        self.assertEqual(sorted(line.split()[0] for line in r.stdout.splitlines()),
                         ["/work/out", "/work/rw", "/work/src"], r.stdout)

        # cp -a in, compileall, a git repository on the rw share.
        timed("cp -a src -> rw", lambda: sh("cp -a /work/src/proj /work/rw/proj"))
        timed("python3 -m compileall on rw", lambda: sh("python3 -m compileall -q /work/rw/proj"))
        r = sh("cd /work/rw/proj && python3 -c 'import pkg.mod; print(pkg.mod.twice())'")
        self.assertEqual(r.stdout, "84\n")
        pyc = os.path.join(self.rw, "proj", "pkg", "__pycache__")
        self.assertTrue(os.path.isdir(pyc) and any(n.startswith("mod.") for n in os.listdir(pyc)),
                        "compileall's output is not on the host")
        st = os.stat(os.path.join(pyc, sorted(os.listdir(pyc))[0]))
        self.assertEqual((st.st_uid, st.st_gid), (OWNER, OWNER), "not the folder owner's")
        git = ("git -c user.name=agent -c user.email=agent@sandbox -c init.defaultBranch=main "
               "-c safe.directory='*'")
        timed("git init + commit + clone on rw", lambda: sh(
            f"cd /work/rw && {git} init -q repo && cd repo && echo one > a.txt && {git} add a.txt"
            f" && {git} commit -qm first && echo two >> a.txt && {git} commit -qam second"
            f" && cd .. && {git} clone -q repo clone && cat clone/a.txt"))
        log = subprocess.run(["git", "-C", os.path.join(self.rw, "repo"), "-c",
                              "safe.directory=*", "log", "--format=%s"],
                             capture_output=True, text=True)
        self.assertEqual(log.stdout, "second\nfirst\n", log.stderr)
        with open(os.path.join(self.rw, "clone", "a.txt")) as f:
            self.assertEqual(f.read(), "one\ntwo\n")

        # Many files at once: each looked-up inode is an open file of the VMM's, so its jail's
        # limit must cover them (5,000 is past both a shell's 1,024 and the old 4,096).
        timed("5,000 files created and kept on rw", lambda: sh(
            "mkdir /work/rw/many && python3 -c \"[open('/work/rw/many/f%05d' % i, 'w').close() "
            "for i in range(5000)]\" && ls /work/rw/many | wc -l"))
        self.assertEqual(len(os.listdir(os.path.join(self.rw, "many"))), 5000)
        sh("rm -r /work/rw/many")

        # The ro share: every write refused, the host folder unchanged.
        src_before = sorted(os.listdir(os.path.join(self.src, "proj", "pkg")))
        for cmd in ("touch /work/src/new", "echo x >> /work/src/proj/pkg/data.txt",
                    "rm /work/src/proj/pkg/mod.py", "mkdir /work/src/d",
                    "mv /work/src/proj/pkg/mod.py /work/src/proj/pkg/m2.py"):
            r = sb.exec(cmd, timeout=EXEC_S)
            self.assertNotEqual(r.exit_code, 0, cmd)
            self.assertIn("Read-only file system", r.stderr, cmd)
        self.assertEqual(sorted(os.listdir(os.path.join(self.src, "proj", "pkg"))), src_before)
        with open(os.path.join(self.src, "proj", "pkg", "data.txt")) as f:
            self.assertEqual(f.read(), "some data\n")
        # A host symlink in the share is the guest's to resolve: the guest's /etc/hostname.
        r = sh("cat /work/src/proj/hostname-link")
        self.assertEqual(r.stdout, sh("cat /etc/hostname").stdout)
        with open("/etc/hostname") as f:
            if f.read() != r.stdout:
                say("the link read the guest's /etc/hostname, not the host's")

        # rw-nodelete: create and append work; unlink, truncation, rename over refused.
        timed("docgen into rw-nodelete", lambda: sh(
            f"echo '{SPEC}' | docgen --spec - --out /work/out/report.pdf"))
        with open(os.path.join(self.out, "report.pdf"), "rb") as f:
            self.assertEqual(f.read(5), b"%PDF-")
        sh("echo more >> /work/out/keep.txt && mkdir /work/out/new && echo n > /work/out/new/f")
        timed("cp -a rw -> rw-nodelete", lambda: sh("cp -a /work/rw/proj /work/out/proj-copy"))
        for cmd in ("rm /work/out/keep.txt", ": > /work/out/keep.txt", "rm -r /work/out/new",
                    "echo x > /work/out/other && mv -f /work/out/other /work/out/keep.txt"):
            r = sb.exec(cmd, timeout=EXEC_S)
            self.assertNotEqual(r.exit_code, 0, cmd)
            self.assertIn("Operation not permitted", r.stderr, cmd)
        with open(os.path.join(self.out, "keep.txt")) as f:
            self.assertEqual(f.read(), "keep me\nmore\n")
        self.assertTrue(os.path.isfile(os.path.join(self.out, "proj-copy", "pkg", "mod.py")))
        self.assertTrue(os.path.isfile(os.path.join(self.out, "new", "f")))

        # The files API reaches into the shares too.
        sb.files.write("/work/rw/from-api.txt", "via the files API\n")
        with open(os.path.join(self.rw, "from-api.txt")) as f:
            self.assertEqual(f.read(), "via the files API\n")
        self.assertEqual(sb.files.read("/work/src/proj/pkg/data.txt"), b"some data\n")

        # Fork: the parent's shares are unmounted for the snapshot and mounted again after it.
        # A share in use (a process's working directory) cannot be: 409, the parent unchanged.
        sh("cd /work/rw && (sleep 600 >/dev/null 2>&1 </dev/null & echo $! > /tmp/holder)")
        with self.assertRaises(cc.Conflict):
            sb.fork(1, mounts="inherit")
        sh("kill $(cat /tmp/holder)")
        sh("echo still > /work/rw/after-refused-fork")
        kids = timed("fork with inherited mounts (made ro)", lambda: sb.fork(1, mounts="inherit"))
        self.assertEqual(len(kids), 1)
        kid = kids[0]
        self.assertEqual([m["mode"] for m in kid.mounts], ["ro", "ro", "ro"], kid.info)
        r = kid.exec("cat /work/rw/proj/pkg/data.txt && touch /work/rw/kid", timeout=EXEC_S)
        self.assertEqual(r.stdout, "some data\n")
        self.assertIn("Read-only file system", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.rw, "kid")))
        # The parent has its shares back, writable as before.
        sh("echo parent-after-fork > /work/rw/parent-after-fork && ls /work/out/report.pdf")
        with open(os.path.join(self.rw, "parent-after-fork")) as f:
            self.assertEqual(f.read(), "parent-after-fork\n")
        timed("DELETE the fork child", kid.kill)

        # The mode matrix, in a sandbox of its own from the refilled pool.
        mx = timed("POST /sandboxes with the matrix's 3 mounts", lambda: cc.Sandbox(c.json(
            "POST", "/sandboxes", {"template": tpl.id, "timeout_s": 1800, "mounts": [
                {"host_path": os.path.join(self.ws, "m-" + m), "guest_path": "/work/m-" + m,
                 "mode": m} for m in ("ro", "rw", "rw-nodelete")]}), c))
        mx.files.write("matrix.py", MATRIX)
        got = {}
        for m in ("ro", "rw", "rw-nodelete"):
            r = mx.exec(["python3", "/work/matrix.py", "/work/m-" + m], timeout=EXEC_S)
            self.assertEqual(r.exit_code, 0, r.stderr)
            got[m] = json.loads(r.stdout)
            self.assertEqual(got[m]["owner_inside"], "0:0", m)
        for op, *want in EXPECTED:
            self.assertEqual([got[m][op] for m in ("ro", "rw", "rw-nodelete")], want, op)
        say("mode matrix: " + ", ".join(f"{op} {'/'.join(w)}" for op, *w in EXPECTED))

        def host(mode, name):
            path = os.path.join(self.ws, "m-" + mode, name)
            if not os.path.lexists(path):
                return None
            with open(path) as f:
                return f.read()
        for name in MATRIX_FILES:  # ro: every byte as it was
            self.assertEqual(host("ro", name), f"keep {name}\n", name)
        self.assertIsNone(host("ro", "new.txt"))
        self.assertEqual(host("rw-nodelete", "existing.txt"), "keep existing.txt\n+\n")
        for name in ("trunc.txt", "otrunc.txt", "victim.txt", "src.txt", "target.txt"):
            self.assertEqual(host("rw-nodelete", name), f"keep {name}\n", name)
        self.assertEqual(host("rw-nodelete", "renamed.txt"), "keep renameme.txt\n")
        self.assertEqual(host("rw", "existing.txt"), "Heep existing.txt\n+\n")
        self.assertIsNone(host("rw", "victim.txt"))
        self.assertEqual(host("rw", "target.txt"), "keep src.txt\n")
        st = os.stat(os.path.join(self.ws, "m-rw", "new.txt"))
        self.assertEqual((st.st_uid, st.st_gid), (os.stat(self.ws).st_uid, os.stat(self.ws).st_gid))
        timed("DELETE the matrix sandbox", mx.kill)

        # The host's mount table never saw any of it; destroy leaves the folders' contents.
        self.assertEqual(host_mounts_naming(self.ws), [])
        timed("DELETE /sandboxes/{id}", sb.kill)
        timed("DELETE /templates/{id}", tpl.delete)
        deadline = time.monotonic() + 30 * TIMEOUT_SCALE
        while vmm_processes(daemon.state, daemon.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertEqual(vmm_processes(daemon.state, daemon.proc.pid), [])
        self.assertEqual(host_mounts_naming(self.ws), [])
        with open(os.path.join(self.out, "keep.txt")) as f:
            self.assertEqual(f.read(), "keep me\nmore\n")
        say("nothing left behind; the shares keep their files")


if __name__ == "__main__":
    unittest.main(verbosity=2)
