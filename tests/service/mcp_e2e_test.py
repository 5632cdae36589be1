"""`carapace mcp` over pipes against a real `carapace serve` (process back end, real rootfs): the
MCP handshake, the four tools, and the sandbox it created destroyed at EOF."""

import base64
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from daemon_harness import DOC_SPEC, DaemonTestCase, cc, reap  # noqa: E402


class McpE2E(DaemonTestCase):
    def start_mcp(self, *args):
        proc = subprocess.Popen(
            [self.daemon.exe, "mcp", "--socket", self.daemon.socket, *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(reap, proc)
        self._id = 0
        return proc

    def rpc(self, proc, method, params=None, notify=False):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            self._id += 1
            msg["id"] = self._id
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()
        if notify:
            return None
        line = proc.stdout.readline()
        if not line:  # (stderr only then: reading it earlier would wait for the server's exit)
            self.fail("carapace mcp closed stdout: " + proc.stderr.read().decode())
        reply = json.loads(line)
        self.assertEqual(reply["id"], self._id)
        return reply

    def tool(self, proc, name, **arguments):
        reply = self.rpc(proc, "tools/call", {"name": name, "arguments": arguments})
        self.assertIn("result", reply, reply)
        return reply["result"]

    def test_tools_and_cleanup(self):
        out_dir = tempfile.mkdtemp(prefix="carapace-mcp-out-")
        proc = self.start_mcp("--template", self.tpl.id, "--out-dir", out_dir)
        init = self.rpc(proc, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                                             "clientInfo": {"name": "e2e", "version": "0"}})
        self.assertEqual(init["result"]["protocolVersion"], "2024-11-05")
        self.rpc(proc, "notifications/initialized", notify=True)
        tools = {t["name"] for t in self.rpc(proc, "tools/list")["result"]["tools"]}
        self.assertEqual(tools, {"run_command", "write_file", "read_file", "generate_document"})
        before = {s.id for s in cc.Sandbox.list(client=self.daemon.client)}

        r = self.tool(proc, "run_command", command="echo hello; uname -s")
        self.assertFalse(r["isError"], r)
        self.assertIn("hello\nLinux", r["content"][0]["text"])
        r = self.tool(proc, "write_file", path="notes.txt", content="from mcp\n")
        self.assertFalse(r["isError"], r)
        r = self.tool(proc, "read_file", path="notes.txt")
        self.assertEqual(r["content"][0]["text"], "from mcp\n")
        blob = bytes(range(256))
        r = self.tool(proc, "write_file", path="b.bin", content=base64.b64encode(blob).decode(),
                      encoding="base64")
        self.assertFalse(r["isError"], r)
        r = self.tool(proc, "read_file", path="b.bin", encoding="base64")
        self.assertEqual(base64.b64decode(r["content"][0]["text"]), blob)
        r = self.tool(proc, "run_command", command="exit 7")
        self.assertTrue(r["isError"])
        self.assertIn("exit code 7", r["content"][0]["text"])
        r = self.tool(proc, "read_file", path="../../etc/shadow")
        self.assertTrue(r["isError"])

        r = self.tool(proc, "generate_document", spec=DOC_SPEC, format="docx", path="report.docx")
        self.assertFalse(r["isError"], r)
        saved = os.path.join(out_dir, "document-1.docx")
        self.assertIn(saved, r["content"][0]["text"])
        with open(saved, "rb") as f:
            self.assertEqual(f.read(4), b"PK\x03\x04")
        r = self.tool(proc, "run_command", command="test -s report.docx && echo present")
        self.assertIn("present", r["content"][0]["text"])

        # Garbage on stdin is answered, not fatal.
        proc.stdin.write(b"{oops\n")
        proc.stdin.flush()
        self.assertEqual(json.loads(proc.stdout.readline())["error"]["code"], -32700)

        created = {s.id for s in cc.Sandbox.list(client=self.daemon.client)} - before
        self.assertEqual(len(created), 1)
        proc.stdin.close()  # EOF: the server destroys what it created and exits 0
        self.assertEqual(proc.wait(60), 0, proc.stderr.read().decode())
        after = {s.id for s in cc.Sandbox.list(client=self.daemon.client)}
        self.assertFalse(created & after, "carapace mcp left its sandbox behind")

    def test_existing_sandbox_is_left_running(self):
        sb = cc.Sandbox.create(template=self.tpl.id, client=self.daemon.client)
        self.addCleanup(sb.kill)
        proc = self.start_mcp("--sandbox", sb.id)
        r = self.tool(proc, "generate_document", spec=DOC_SPEC, format="pdf")
        self.assertFalse(r["isError"], r)
        resource = r["content"][1]["resource"]
        self.assertEqual(resource["mimeType"], "application/pdf")
        self.assertTrue(base64.b64decode(resource["blob"]).startswith(b"%PDF"))
        proc.terminate()  # SIGTERM
        self.assertEqual(proc.wait(60), 0)
        self.assertEqual(cc.Sandbox.connect(sb.id, client=self.daemon.client).state, "running")


if __name__ == "__main__":
    unittest.main()
