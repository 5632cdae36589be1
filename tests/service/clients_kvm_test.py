"""The daemon's clients against a real `carapace serve` with the microvm back end over KVM and the
test guest's agent-ping scenario (label kvm): the Python client's lifecycle calls, `carapace
sandbox`, and `carapace mcp` creating its sandbox lazily and destroying it at EOF. The test
guest's agent does not run commands, so exec must come back as a clean API error."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from daemon_harness import DaemonTestCase, cc, reap  # noqa: E402


class ClientsOverKvm(DaemonTestCase):
    TEMPLATE = "testguest_template"

    def ids(self):
        return {s.id for s in cc.Sandbox.list(client=self.daemon.client)}

    def test_python_lifecycle(self):
        before = self.ids()
        with cc.Sandbox.create(template=self.tpl.id, timeout=120,
                               client=self.daemon.client) as sb:
            self.assertEqual(sb.state, "running")
            self.assertEqual(sb.pause().state, "paused")
            with self.assertRaises(cc.Conflict):
                sb.pause()
            self.assertEqual(sb.resume().state, "running")
            sb.set_timeout(60)
            kids = sb.fork(2)
            self.assertEqual(len(kids), 2)
            self.assertEqual({k.info["parent"] for k in kids}, {sb.id})
            self.assertLessEqual({sb.id} | {k.id for k in kids}, self.ids())
            for k in kids:
                k.kill()
            with self.assertRaises(cc.CarapaceError):
                sb.exec("echo hi")  # agent-ping serves no exec
        self.assertEqual(self.ids(), before, self.daemon.log_tail())
        with self.assertRaises(cc.NotFound):
            cc.Sandbox.connect(sb.id, client=self.daemon.client)
        self.assertIn(self.tpl.id, [t.id for t in cc.Template.list(client=self.daemon.client)])

    def test_cli_lifecycle(self):
        env = self.daemon.env()

        def cli(*args):
            return subprocess.run([self.daemon.exe, "sandbox", *args], env=env,
                                  capture_output=True, timeout=120)

        r = cli("create", "--template", self.tpl.id, "--timeout", "120")
        self.assertEqual(r.returncode, 0, r.stderr)
        sb = r.stdout.decode().strip()
        self.assertEqual(cli("pause", sb).returncode, 0)
        r = cli("pause", sb)
        self.assertEqual((r.returncode, r.stderr.count(b"\n")), (2, 1), r.stderr)
        self.assertEqual(cli("resume", sb).returncode, 0)
        r = cli("ls", "--json")
        self.assertIn(sb, [s["id"] for s in json.loads(r.stdout)])
        r = cli("exec", sb, "--", "true")
        self.assertNotEqual(r.returncode, 0)
        self.assertTrue(r.stderr.startswith(b"carapace sandbox: "), r.stderr)
        self.assertEqual(cli("rm", sb).returncode, 0)
        self.assertEqual(cli("rm", sb).returncode, 2)  # 404

    def test_mcp_creates_lazily_and_cleans_up(self):
        before = self.ids()
        proc = subprocess.Popen([self.daemon.exe, "mcp", "--template", self.tpl.id],
                                env=self.daemon.env(), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(reap, proc)

        def rpc(i, method, params=None):
            msg = {"jsonrpc": "2.0", "id": i, "method": method}
            if params is not None:
                msg["params"] = params
            proc.stdin.write((json.dumps(msg) + "\n").encode())
            proc.stdin.flush()
            reply = json.loads(proc.stdout.readline())
            self.assertEqual(reply["id"], i)
            return reply

        self.assertEqual(rpc(1, "initialize", {"protocolVersion": "2024-11-05"})["result"]
                         ["serverInfo"]["name"], "carapace")
        self.assertEqual(self.ids(), before)  # nothing created before the first tool call
        r = rpc(2, "tools/call", {"name": "run_command", "arguments": {"command": "true"}})
        self.assertTrue(r["result"]["isError"])  # agent-ping: the tool fails, the server lives
        self.assertEqual(len(self.ids() - before), 1)
        self.assertEqual(rpc(3, "ping")["result"], {})
        proc.stdin.close()
        self.assertEqual(proc.wait(60), 0, proc.stderr.read().decode())
        self.assertEqual(self.ids(), before, "carapace mcp left its sandbox behind")


if __name__ == "__main__":
    unittest.main()
