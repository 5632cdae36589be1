"""`carapace sandbox` end to end. Two modes:
  --fake   against the fake daemon of the Python client's tests (label unit): output, request
           bodies, exit statuses (the command's own, 2 for a refused request, 1 for transport),
           and `carapace mcp`'s operator credentials
  (none)   against a real `carapace serve` with the process back end (label image)
Environment: CARAPACE_EXE (and CARAPACE_ROOTFS for the real daemon)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.path.insert(0, os.path.join(_HERE, "..", "..", "clients", "python", "tests"))

from daemon_harness import DOC_SPEC, Daemon, cc, require_env  # noqa: E402

FAKE = "--fake" in sys.argv
if FAKE:
    sys.argv.remove("--fake")


class SandboxCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.exe = require_env("CARAPACE_EXE")
        if FAKE:
            from fake_daemon import FakeDaemon
            cls.fake = FakeDaemon().__enter__()
            cls.socket = cls.fake.socket
            cls.daemon = None
            tpl = cc.Template.create(isolation="process", rootfs="/r", socket=cls.socket)
        else:
            cls.daemon = Daemon()
            try:
                cls.daemon.start()
                tpl = cls.daemon.process_template()
            except BaseException:
                cls.daemon.stop()
                raise
            cls.socket = cls.daemon.socket
        cls.tpl = tpl.id

    @classmethod
    def tearDownClass(cls):
        if FAKE:
            cls.fake.__exit__(None, None, None)
        else:
            cls.daemon.stop()

    def cli(self, *args, stdin=None, env_socket=True):
        env = dict(os.environ)
        env.pop("CARAPACE_SOCKET", None)
        if env_socket:
            env["CARAPACE_SOCKET"] = self.socket
        return subprocess.run([self.exe, "sandbox", *args], input=stdin, env=env,
                              capture_output=True, timeout=300)

    def create(self):
        r = self.cli("create", "--template", self.tpl, "--env", "GREETING=hi")
        self.assertEqual(r.returncode, 0, r.stderr)
        sb = r.stdout.decode().strip()
        self.assertRegex(sb, r"^sb-[0-9a-f]+$")
        self.addCleanup(self.cli, "rm", sb)
        return sb

    def test_exec_status_and_streams(self):
        sb = self.create()
        if FAKE:
            r = self.cli("exec", sb, "--", "echo", "hi")
            self.assertEqual((r.returncode, r.stdout, r.stderr), (0, b"hi\nGREETING=hi\n", b"warn\n"))
            r = self.cli("exec", sb, "--stream", "--", "echo", "streamed")
            self.assertEqual((r.returncode, r.stdout, r.stderr),
                             (0, b"streamed\nGREETING=hi\n", b"warn\n"))
            r = self.cli("exec", sb, "--", "sh", "-c", "exit 3")
            self.assertEqual(r.returncode, 3)
            body = json.loads(self.fake.requests[-1][3])
            self.assertEqual(body["argv"], ["sh", "-c", "exit 3"])
            return
        r = self.cli("exec", sb, "--", "sh", "-c", "echo $GREETING; echo e >&2; exit 3")
        self.assertEqual((r.returncode, r.stdout, r.stderr), (3, b"hi\n", b"e\n"))
        r = self.cli("exec", sb, "--stream", "--", "sh", "-c", "echo a; sleep 0.2; echo b")
        self.assertEqual((r.returncode, r.stdout), (0, b"a\nb\n"))
        r = self.cli("exec", sb, "--", "sh", "-c", "kill -9 $$")
        self.assertEqual(r.returncode, 137)

    def test_files_and_docs(self):
        sb = self.create()
        with tempfile.TemporaryDirectory() as d:
            local = os.path.join(d, "in.bin")
            with open(local, "wb") as f:
                f.write(bytes(range(256)))
            self.assertEqual(self.cli("put", sb, local, "in.bin").returncode, 0)
            r = self.cli("get", sb, "in.bin", "-")
            self.assertEqual((r.returncode, r.stdout), (0, bytes(range(256))))
            spec = os.path.join(d, "spec.json")
            with open(spec, "w") as f:
                json.dump(DOC_SPEC, f)
            out = os.path.join(d, "out.docx")
            r = self.cli("doc", sb, spec, "docx", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out, "rb") as f:
                self.assertEqual(f.read(4), b"PK\x03\x04")

    def test_list_and_lifecycle(self):
        sb = self.create()
        r = self.cli("ls", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(sb, [s["id"] for s in json.loads(r.stdout)])
        r = self.cli("ls")
        self.assertIn(sb.encode(), r.stdout)
        self.assertEqual(self.cli("pause", sb).returncode, 0)
        r = self.cli("pause", sb)  # 409
        self.assertEqual(r.returncode, 2)
        self.assertTrue(r.stderr.startswith(b"carapace sandbox: "), r.stderr)
        self.assertEqual(r.stderr.count(b"\n"), 1)
        self.assertEqual(self.cli("resume", sb).returncode, 0)
        r = self.cli("template", "ls")
        self.assertIn(self.tpl.encode(), r.stdout)

    if FAKE:
        # Egress needs the daemon's proxy side, so only the fake runs these: the request bodies,
        # the printed view and the exit statuses.
        def test_network_flags(self):
            r = self.cli("create", "--template", self.tpl, "--allow-host", "pypi.org:443",
                         "--deny-host", "evil.pypi.org")
            self.assertEqual(r.returncode, 0, r.stderr)
            sb = r.stdout.decode().strip()
            self.addCleanup(self.cli, "rm", sb)
            self.assertEqual(json.loads(self.fake.requests[-1][3])["network"],
                             {"allow_hosts": ["pypi.org:443"], "deny_hosts": ["evil.pypi.org"]})
            r = self.cli("network", sb, "--allow-host", "PyPI.org", "--allow-host", "*.npmjs.org")
            self.assertEqual(r.returncode, 0, r.stderr)
            method, path, _, body = self.fake.requests[-1]
            self.assertEqual((method, path), ("PUT", f"/sandboxes/{sb}/network"))
            self.assertEqual(json.loads(body), {"allow_hosts": ["PyPI.org", "*.npmjs.org"]})
            view = json.loads(r.stdout)  # the daemon's answer, as JSON
            self.assertEqual(view["id"], sb)
            self.assertEqual(view["network"]["allow_hosts"], ["pypi.org", "*.npmjs.org"])
            self.assertEqual(view["network"]["proxy"], "http://127.0.0.1:3128")
            r = self.cli("network", sb, "--off")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(self.fake.requests[-1][3]), {"internet": False})
            self.assertFalse(json.loads(r.stdout)["network"]["internet"])
            r = self.cli("fork", sb, "--count", "1", "--no-internet")
            self.assertEqual(r.returncode, 0, r.stderr)
            kid = r.stdout.decode().strip()
            self.addCleanup(self.cli, "rm", kid)
            self.assertEqual(json.loads(self.fake.requests[-1][3]),
                             {"count": 1, "network": {"internet": False}})
            # Refused by the daemon (a bad rule, a paused sandbox): exit 2 and its one line.
            r = self.cli("network", sb, "--allow-host", "pypi.org", "--allow-host", "a b")
            self.assertEqual(r.returncode, 2)
            self.assertEqual(r.stderr, b"carapace sandbox: network.allow_hosts[1]: 'a b' is not "
                                       b"a host rule\n")
            self.assertEqual(self.cli("pause", sb).returncode, 0)
            r = self.cli("network", sb, "--allow-host", "pypi.org")
            self.assertEqual(r.returncode, 2)
            self.assertIn(b"paused", r.stderr)
            # Usage errors are the CLI's own: one line, exit 2, nothing sent.
            sent = len(self.fake.requests)
            for args in (["network", sb, "--off", "--allow-host", "pypi.org"],
                         ["network", sb],
                         ["create", "--template", self.tpl, "--no-internet", "--allow-host", "x"],
                         ["fork", sb, "--deny-host", "x"]):
                r = self.cli(*args)
                self.assertEqual(r.returncode, 2, args)
                self.assertEqual(r.stderr.count(b"\n"), 1, r.stderr)
                self.assertEqual(r.stdout, b"")
            self.assertEqual(len(self.fake.requests), sent)

        # --credential and --upstream: the secret read from the CLI's environment or a file goes
        # in the request body only; the printed view is the daemon's, redacted; bad input is the
        # CLI's own one line and exit 2, with nothing sent and the secret never printed.
        def test_credential_flags(self):
            secret = "cli-s3cret-from-env"
            env_spec = ("env=API_TOKEN,host=api.example.com,secret-env=CARAPACE_CLI_SECRET,"
                        "header=Authorization: Bearer {secret}")
            with tempfile.NamedTemporaryFile("w", suffix=".key") as key:
                key.write("file-s3cret\nignored\n")
                key.flush()
                file_spec = f"env=MAPS_KEY,host=maps.example.com,query=key,secret-file={key.name}"
                os.environ["CARAPACE_CLI_SECRET"] = secret
                self.addCleanup(os.environ.pop, "CARAPACE_CLI_SECRET", None)
                r = self.cli("create", "--template", self.tpl, "--allow-host",
                             "api.example.com:443", "--credential", env_spec, "--credential",
                             file_spec, "--upstream",
                             "api.carapace.internal=https://api.example.com")
                self.assertEqual(r.returncode, 0, r.stderr)
                sb = r.stdout.decode().strip()
                self.addCleanup(self.cli, "rm", sb)
                network = json.loads(self.fake.requests[-1][3])["network"]
                self.assertEqual(network["credentials"], [
                    {"hosts": ["api.example.com"], "header": "Authorization: Bearer {secret}",
                     "secret": secret, "env": "API_TOKEN"},
                    {"hosts": ["maps.example.com"], "query": "key", "secret": "file-s3cret",
                     "env": "MAPS_KEY"}])
                self.assertEqual(network["upstreams"], [
                    {"alias": "api.carapace.internal", "origin": "https://api.example.com"}])
                r = self.cli("network", sb, "--allow-host", "api.example.com:443",
                             "--credential", env_spec)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(json.loads(self.fake.requests[-1][3])["credentials"][0]["secret"],
                                 secret)
                self.assertNotIn(secret.encode(), r.stdout + r.stderr)
                view = json.loads(r.stdout)
                self.assertEqual(view["network"]["credentials"][0]["secret"], "<redacted>")
            sent = len(self.fake.requests)
            for args in (["create", "--template", self.tpl, "--allow-host", "h", "--credential",
                          f"env=K,host=h,query=q,secret={secret}"],
                         ["create", "--template", self.tpl, "--allow-host", "h", "--credential",
                          "env=K,host=h,query=q,secret-env=CARAPACE_CLI_UNSET"],
                         ["create", "--template", self.tpl, "--allow-host", "h", "--credential",
                          "env=K,host=h,query=q,secret-file=/nonexistent/key"],
                         ["network", sb, "--credential", env_spec],
                         ["fork", sb, "--upstream", "a.internal=http://h"]):
                r = self.cli(*args)
                self.assertEqual(r.returncode, 2, args)
                self.assertEqual(r.stderr.count(b"\n"), 1, r.stderr)
                self.assertNotIn(secret.encode(), r.stderr)
                self.assertEqual(r.stdout, b"")
            self.assertEqual(len(self.fake.requests), sent)

        # `carapace mcp --credential ...` over pipes: the operator's credentials go into the
        # sandbox it creates and back into every set_sandbox_network; the model sees no secret.
        def test_mcp_operator_credentials(self):
            secret = "mcp-operator-s3cret"
            env = dict(os.environ, CARAPACE_SOCKET=self.socket, CARAPACE_MCP_SECRET=secret)
            spec = ("env=API_TOKEN,host=api.example.com,secret-env=CARAPACE_MCP_SECRET,"
                    "header=Authorization: Bearer {secret}")
            calls = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
                     {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                     {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "set_sandbox_network",
                                 "arguments": {"allow_hosts": ["api.example.com:443",
                                                               "pypi.org:443"]}}}]
            sent = len(self.fake.requests)
            r = subprocess.run(
                [self.exe, "mcp", "--template", self.tpl, "--allow-host", "api.example.com:443",
                 "--credential", spec, "--upstream",
                 "api.carapace.internal=https://api.example.com", "--network-tool"],
                input="".join(json.dumps(c) + "\n" for c in calls).encode(), env=env,
                capture_output=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn(secret.encode(), r.stdout + r.stderr)
            replies = [json.loads(line) for line in r.stdout.splitlines()]
            self.assertEqual([x["id"] for x in replies], [1, 2, 3])
            text = replies[2]["result"]["content"][0]["text"]
            self.assertFalse(replies[2]["result"]["isError"], text)
            self.assertIn("<redacted>", text)
            requests = self.fake.requests[sent:]
            self.assertEqual([m for m, _, _, _ in requests], ["POST", "PUT", "DELETE"])
            self.assertTrue(requests[1][1].endswith("/network"), requests[1][1])
            create = json.loads(requests[0][3])["network"]
            put = json.loads(requests[1][3])
            for network in (create, put):
                self.assertEqual(network["credentials"][0]["secret"], secret)
                self.assertEqual(network["upstreams"][0]["alias"], "api.carapace.internal")
            self.assertEqual(put["allow_hosts"], ["api.example.com:443", "pypi.org:443"])

    def test_errors(self):
        r = self.cli("exec", "sb-000000000000", "--", "true")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"sb-000000000000", r.stderr)
        r = self.cli("create", "--template", "tpl-000000000000")
        self.assertEqual(r.returncode, 2)
        r = self.cli("--socket", self.socket + ".absent", "ls", env_socket=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn(b".absent", r.stderr)
        r = self.cli("bogus")
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    unittest.main()
