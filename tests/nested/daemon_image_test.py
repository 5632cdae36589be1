#!/usr/bin/python3
"""The sandbox daemon as root (jailed VMMs) with a microvm template of the real image (label
`nested`: run inside tools/nested-kvm's L1, or directly on a VMX/SVM host).

Template build, pool hit, create -> exec streamed over SSE with its exit status, documents in
four formats (each read back with doccheck.py), fork into 2 children that each exec (each sees
the parent's file, writes its own, the parent does not see them), pause/resume (exec on a paused
sandbox refused), `carapace mcp --template` making a document through the same daemon, destroy,
and nothing left behind: no jail folder, cgroup, socket or VMM process. The steps go through the
Python client (clients/python).

Environment: CARAPACE_EXE, CARAPACE_KERNEL, CARAPACE_ROOTFS (tests/nested/CMakeLists.txt);
CARAPACE_E2E_DAEMON_CONFIG and CARAPACE_E2E_TIMEOUT_SCALE as in tests/service/daemon_harness.py.
"""

import json
import os
import select
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "service"))
sys.path.insert(0, os.path.join(REPO, "guest", "docgen", "tests"))

from daemon_harness import TIMEOUT_SCALE, Daemon, cc  # noqa: E402

EXAMPLES = os.path.join(REPO, "guest", "docgen", "examples")
FORMATS = ("docx", "pptx", "xlsx", "pdf")


def say(msg):
    print(f"daemon_image_test: {msg}", flush=True)


def timed(label, fn):
    t0 = time.monotonic()
    result = fn()
    say(f"{label:<58} {1000 * (time.monotonic() - t0):10.1f} ms")
    return result


def cgroups_named(prefix):
    found = []
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        found += [os.path.join(root, d) for d in dirs if d.startswith(prefix)]
    return found


def vmm_processes(state, daemon_pid):
    """Live processes but the daemon whose command line names its state folder (VMMs, jails)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == daemon_pid:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if state.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def diagnostics(daemon):
    """The daemon's log and every VM's log and console tail, for a failure message."""
    parts = ["---- daemon log ----", daemon.log_tail(6000)]
    for root, _, files in os.walk(daemon.state):
        for name in files:
            if name in ("console", "log") or name.endswith((".log", ".console")):
                path = os.path.join(root, name)
                try:
                    with open(path, "rb") as f:
                        tail = f.read()[-1500:].decode("utf-8", "replace")
                except OSError:
                    continue
                parts += [f"---- {path} ----", tail]
    return "\n".join(parts)


# Every exec here is bounded, so a guest that stops answering fails the test instead of hanging it.
EXEC_S = 30 * TIMEOUT_SCALE


class DaemonImage(unittest.TestCase):
    def test_real_image_sandboxes(self):
        if os.geteuid() != 0:
            self.fail("needs root: the daemon jails its VMMs only as root")
        daemon = Daemon()
        self.addCleanup(daemon.stop)
        daemon.start()
        try:
            self.flow(daemon)
        except BaseException:
            print(diagnostics(daemon), file=sys.stderr, flush=True)
            raise

    def flow(self, daemon):
        c = daemon.client
        health = cc.health(client=c)
        self.assertTrue(health.get("jailed_vmms"), health)

        tpl = timed("POST /templates (boot, agent ready, snapshot)", lambda: cc.Template.create(
            isolation="microvm", kernel=os.environ["CARAPACE_KERNEL"],
            rootfs=os.environ["CARAPACE_ROOTFS"],
            boot_args="console=ttyS0 root=/dev/vda ro init=/usr/sbin/carapace-agent reboot=k "
                      "panic=-1", mem_mib=1024, pool_size=2, name="nested-image",
            agent_timeout_s=int(60 * TIMEOUT_SCALE), client=c, timeout=900 * TIMEOUT_SCALE))

        def pool_ready(n):
            deadline = time.monotonic() + 300 * TIMEOUT_SCALE
            while time.monotonic() < deadline:
                if c.json("GET", f"/templates/{tpl.id}")["pool"]["ready"] >= n:
                    return
                time.sleep(0.1)
            self.fail(f"the pool did not reach {n}:\n" + daemon.log_tail())

        timed("pool filled (2 restored VMs)", lambda: pool_ready(2))
        sb = timed("POST /sandboxes (pool hit)",
                   lambda: cc.Sandbox.create(template=tpl.id, timeout=1800, client=c))
        self.assertTrue(sb.info.get("from_pool"), sb.info)
        self.assertNotEqual(sb.info["backend"]["jail"]["host_uid"], 0, sb.info)

        # exec over SSE: events in order, the first while the command still sleeps.
        chunks = []
        t0 = time.monotonic()
        r = timed("exec (SSE): echo; sleep 3; echo; exit 7", lambda: sb.exec(
            "echo tick1; sleep 3; echo tick2; echo oops >&2; exit 7", timeout=EXEC_S,
            on_stdout=lambda s: chunks.append((time.monotonic() - t0, s))))
        self.assertEqual((r.exit_code, r.stdout, r.stderr), (7, "tick1\ntick2\n", "oops\n"))
        self.assertGreaterEqual(len(chunks), 2, chunks)
        self.assertGreater(chunks[-1][0] - chunks[0][0], 2.5, f"not streamed: {chunks}")
        self.assertEqual(sb.exec(["uname", "-s"], timeout=EXEC_S).stdout, "Linux\n")

        # Documents in four formats, read back here.
        import doccheck
        with open(os.path.join(EXAMPLES, "report.json")) as f:
            spec = json.load(f)
        checked_spec = doccheck.load_spec(os.path.join(EXAMPLES, "report.json"))
        with open(os.path.join(EXAMPLES, "chart.png"), "rb") as f:
            sb.files.write("chart.png", f.read())
        out = os.path.join(daemon.dir, "docs")
        os.makedirs(out)
        for fmt in FORMATS:
            data = timed(f"POST /sandboxes/{{id}}/documents ({fmt})",
                         lambda: sb.document(spec, fmt))
            path = os.path.join(out, f"report.{fmt}")
            with open(path, "wb") as f:
                f.write(data)
            doccheck.check(path, checked_spec)

        # Fork into two children.
        sb.files.write("parent.txt", "from the parent\n")
        children = timed("POST /sandboxes/{id}/fork {count: 2}", lambda: sb.fork(2))
        self.assertEqual(len(children), 2)
        for i, ch in enumerate(children):
            r = timed(f"child {i}: exec", lambda: ch.exec(
                f"cat parent.txt && echo {i} > child-{i}.txt && ls child-*.txt", timeout=EXEC_S))
            self.assertEqual(r.exit_code, 0, r.stderr)
            self.assertEqual(r.stdout, f"from the parent\nchild-{i}.txt\n")
        self.assertEqual(sb.exec("ls child-*.txt 2>/dev/null | wc -l", timeout=EXEC_S)
                         .stdout.strip(), "0")

        # Pause/resume; exec while paused is refused.
        timed("pause", sb.pause)
        with self.assertRaises(cc.Conflict):
            sb.exec("true", timeout=EXEC_S)
        timed("resume", sb.resume)
        r = timed("exec after resume", lambda: sb.exec("cat parent.txt", timeout=EXEC_S))
        self.assertEqual(r.stdout, "from the parent\n")

        # An agent loop's view: `carapace mcp` makes its own sandbox from the template and a
        # document through the daemon, and destroys that sandbox at EOF.
        out_dir = os.path.join(daemon.dir, "mcp-out")
        os.makedirs(out_dir)
        before = {s.id for s in cc.Sandbox.list(client=c)}
        saved = timed("carapace mcp: generate_document (pdf)",
                      lambda: self.mcp_document(daemon, tpl.id, out_dir, spec))
        with open(saved, "rb") as f:
            self.assertEqual(f.read(5), b"%PDF-")
        self.assertEqual({s.id for s in cc.Sandbox.list(client=c)}, before,
                         "carapace mcp left its sandbox behind")

        # Destroy everything; nothing may be left.
        for s in children + [sb]:
            timed(f"DELETE /sandboxes/{s.id}", s.kill)
        timed("DELETE /templates/{id}", tpl.delete)
        deadline = time.monotonic() + 30 * TIMEOUT_SCALE
        while time.monotonic() < deadline:
            left = (vmm_processes(daemon.state, daemon.proc.pid), cgroups_named("vm-"),
                    self.leftovers(daemon))
            if not any(left):
                break
            time.sleep(0.2)
        self.assertEqual(left, ([], [], []), "left behind after destroy")
        say("nothing left behind: no VMM process, vm-* cgroup, jail folder or socket")

    def mcp_document(self, daemon, template, out_dir, spec):
        proc = subprocess.Popen([daemon.exe, "mcp", "--socket", daemon.socket, "--template",
                                 template, "--out-dir", out_dir, "--timeout", "1800"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        try:
            def rpc(n, method, params):
                proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": n, "method": method,
                                              "params": params}) + "\n").encode())
                proc.stdin.flush()
                ready, _, _ = select.select([proc.stdout], [], [], EXEC_S)
                self.assertTrue(ready, f"carapace mcp did not answer {method} in {EXEC_S} s")
                line = proc.stdout.readline()
                if not line:  # (stderr only then: reading it earlier waits for the server's exit)
                    self.fail("carapace mcp closed stdout: " + proc.stderr.read().decode())
                reply = json.loads(line)
                self.assertIn("result", reply, reply)
                return reply["result"]

            rpc(1, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                                  "clientInfo": {"name": "nested", "version": "0"}})
            r = rpc(2, "tools/call", {"name": "run_command", "arguments": {"command": "uname -s"}})
            self.assertIn("Linux", r["content"][0]["text"])
            r = rpc(3, "tools/call", {"name": "generate_document", "arguments": {
                # Its sandbox is a fresh one, without the chart the example refers to.
                "spec": dict(spec, blocks=[b for b in spec["blocks"] if b["type"] != "image"]),
                "format": "pdf", "path": "report.pdf"}})
            self.assertFalse(r["isError"], r)
            saved = os.path.join(out_dir, "document-1.pdf")
            self.assertIn(saved, r["content"][0]["text"])
            proc.stdin.close()  # EOF: it destroys the sandbox it made and exits 0
            self.assertEqual(proc.wait(120 * TIMEOUT_SCALE), 0, proc.stderr.read().decode())
            return saved
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    @staticmethod
    def leftovers(daemon):
        found = []
        for root, dirs, files in os.walk(daemon.state):
            found += [os.path.join(root, n) for n in files if n.endswith((".sock", ".vsock"))]
            found += [os.path.join(root, d) for d in dirs if root.endswith("/jails")]
        return found


if __name__ == "__main__":
    unittest.main()
