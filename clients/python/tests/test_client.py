"""The Python client against a fake daemon (fake_daemon.py): requests, answers, errors and
streamed exec output. Label unit; standard library only."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import carapace_client as cc  # noqa: E402
from fake_daemon import FakeDaemon  # noqa: E402


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.fake = FakeDaemon().__enter__()
        self.addCleanup(self.fake.__exit__, None, None, None)
        self.tpl = cc.Template.create(isolation="process", rootfs="/abs/rootfs.ext4",
                                      pool_size=0, socket=self.fake.socket)

    def last(self):
        return self.fake.requests[-1]

    def test_socket_from_environment(self):
        os.environ["CARAPACE_SOCKET"] = self.fake.socket
        try:
            self.assertEqual(cc.health()["version"], "0.1.0")
        finally:
            del os.environ["CARAPACE_SOCKET"]
        self.assertEqual(cc.Client().socket, cc.DEFAULT_SOCKET)

    def test_template_create_and_list(self):
        method, path, _, body = self.fake.requests[0]
        self.assertEqual((method, path), ("POST", "/templates"))
        self.assertEqual(json.loads(body), {"isolation": "process", "rootfs": "/abs/rootfs.ext4",
                                            "pool_size": 0})
        self.assertTrue(self.tpl.id.startswith("tpl-"))
        ids = [t.id for t in cc.Template.list(socket=self.fake.socket)]
        self.assertEqual(ids, [self.tpl.id])
        with self.assertRaises(cc.BadRequest) as e:
            cc.Template.create(socket=self.fake.socket)
        self.assertEqual(e.exception.status, 400)
        self.assertIn("kernel", e.exception.message)

    def test_create_exec_and_context_manager(self):
        with cc.Sandbox.create(template=self.tpl.id, timeout=60, env={"A": "1"},
                               socket=self.fake.socket) as sb:
            self.assertTrue(sb.id.startswith("sb-"))
            self.assertEqual(json.loads(self.last()[3]),
                             {"template": self.tpl.id, "timeout_s": 60, "env": {"A": "1"}})
            r = sb.exec("echo hi", env={"B": "2"}, cwd="sub", timeout=5)
            self.assertIsInstance(r, cc.ExecResult)
            self.assertEqual(r.exit_code, 0)
            self.assertEqual(r.stdout, "sh -c echo hi\nA=1\nB=2\n")
            self.assertEqual(r.stderr, "warn\n")
            self.assertTrue(r.ok)
            sent = json.loads(self.last()[3])
            self.assertEqual(sent, {"argv": ["sh", "-c", "echo hi"], "env": {"B": "2"},
                                    "cwd": "sub", "timeout_ms": 5000, "stream": False})
            r = sb.exec(["sh", "-c", "exit 3"])
            self.assertEqual(r.exit_code, 3)
            self.assertFalse(r.ok)
            sb_id = sb.id
        self.assertEqual(self.last()[:2], ("DELETE", f"/sandboxes/{sb_id}"))
        self.assertEqual(self.fake.sandboxes, {})

    def test_streamed_exec(self):
        sb = cc.Sandbox.create(template=self.tpl.id, socket=self.fake.socket)
        out, err = [], []
        # The fake sends 3 bytes per event: "é" and "€" arrive split between two events.
        r = sb.exec(["echo", "streamed", "é€"], on_stdout=out.append, on_stderr=err.append)
        self.assertEqual("".join(out), "streamed é€\n")
        self.assertEqual("".join(err), "warn\n")
        self.assertGreater(len(out), 1)  # arrived in pieces
        self.assertEqual(r.exit_code, 0)
        self.assertEqual(r.stdout, "streamed é€\n")
        self.assertEqual(r.duration_ms, 2)
        headers = self.last()[2]
        self.assertEqual(headers.get("Accept"), "text/event-stream")
        self.assertTrue(json.loads(self.last()[3])["stream"])
        # An error event after the stream started is raised as the API error it names.
        with self.assertRaises(cc.BadRequest) as e:
            sb.exec(["missing"], on_stdout=out.append)
        self.assertIn("not found", str(e.exception))
        with self.assertRaises(cc.BadRequest):
            sb.exec(["missing"])

    def test_files(self):
        sb = cc.Sandbox.create(template=self.tpl.id, socket=self.fake.socket)
        data = bytes(range(256))
        self.assertEqual(sb.files.write("dir/a b&c.bin", data, mode=0o600, parents=True),
                         {"path": "dir/a b&c.bin", "size": 256})
        method, path, headers, _ = self.last()
        self.assertEqual(method, "PUT")
        self.assertEqual(path, f"/sandboxes/{sb.id}/files?path=dir%2Fa%20b%26c.bin&mode=0600"
                               "&parents=true")
        self.assertEqual(headers["Content-Type"], "application/octet-stream")
        self.assertEqual(sb.files.read("dir/a b&c.bin"), data)
        sb.files.write("t.txt", "héllo")
        self.assertEqual(sb.files.read_text("t.txt"), "héllo")
        self.assertEqual([e["name"] for e in sb.files.list(".")], ["dir/a b&c.bin", "t.txt"])
        with self.assertRaises(cc.NotFound) as e:
            sb.files.read("absent")
        self.assertEqual(e.exception.code, "not_found")
        self.assertEqual(e.exception.status, 404)

    def test_document(self):
        sb = cc.Sandbox.create(template=self.tpl.id, socket=self.fake.socket)
        self.assertEqual(sb.document({"title": "T", "blocks": []}, "docx"), b"PK\x03\x04docx")
        self.assertEqual(json.loads(self.last()[3]),
                         {"spec": {"title": "T", "blocks": []}, "format": "docx"})
        with self.assertRaises(cc.BadRequest):
            sb.document({}, "pdf")

    def test_lifecycle(self):
        sb = cc.Sandbox.create(template=self.tpl.id, socket=self.fake.socket)
        self.assertEqual(sb.pause().state, "paused")
        with self.assertRaises(cc.Conflict):
            sb.pause()
        self.assertEqual(sb.resume().state, "running")
        sb.set_timeout(120)
        self.assertEqual(json.loads(self.last()[3]), {"timeout_s": 120})
        kids = sb.fork(2)
        self.assertEqual(len(kids), 2)
        self.assertTrue(all(k.info["parent"] == sb.id for k in kids))
        self.assertEqual(len(cc.Sandbox.list(socket=self.fake.socket)), 3)
        with self.assertRaises(cc.LimitExceeded):  # the fake's limit is 3
            cc.Sandbox.create(template=self.tpl.id, socket=self.fake.socket)
        with self.assertRaises(cc.Conflict):
            self.tpl.delete()
        again = cc.Sandbox.connect(sb.id, socket=self.fake.socket)
        self.assertEqual(again.id, sb.id)
        for s in [sb] + kids:
            s.kill()
        sb.kill()  # already gone: not an error
        with self.assertRaises(cc.NotFound):
            cc.Sandbox.connect(sb.id, socket=self.fake.socket)
        self.tpl.delete()

    def test_network_on_create(self):
        sb = cc.Sandbox.create(template=self.tpl.id, socket=self.fake.socket,
                               allow_hosts=["pypi.org:443", "*.pythonhosted.org"],
                               deny_hosts=("evil.pypi.org",))
        self.assertEqual(json.loads(self.last()[3])["network"],
                         {"allow_hosts": ["pypi.org:443", "*.pythonhosted.org"],
                          "deny_hosts": ["evil.pypi.org"]})
        self.assertEqual(sb.network, {"internet": True,
                                      "allow_hosts": ["pypi.org:443", "*.pythonhosted.org"],
                                      "deny_hosts": ["evil.pypi.org"],
                                      "credentials": [], "upstreams": [],
                                      "proxy": "http://127.0.0.1:3128"})
        sb.kill()
        # Only what was given goes out; nothing at all leaves the template's default.
        sb = cc.Sandbox.create(template=self.tpl.id, socket=self.fake.socket, internet=False)
        self.assertEqual(json.loads(self.last()[3])["network"], {"internet": False})
        self.assertEqual(sb.network, {"internet": False, "allow_hosts": [], "deny_hosts": [],
                                      "credentials": [], "upstreams": [],
                                      "proxy": None})
        sb.kill()
        sb = cc.Sandbox.create(template=self.tpl.id, socket=self.fake.socket)
        self.assertNotIn("network", json.loads(self.last()[3]))
        self.assertFalse(sb.network["internet"])  # this template has no default policy
        sb.kill()
        with self.assertRaises(cc.BadRequest) as e:
            cc.Sandbox.create(template=self.tpl.id, socket=self.fake.socket,
                              allow_hosts=["pypi.org"], internet=False)
        self.assertIn("internet false", e.exception.message)
        with self.assertRaises(TypeError):  # a string is not a list of rules
            cc.Sandbox.create(template=self.tpl.id, socket=self.fake.socket,
                              allow_hosts="pypi.org")
        self.assertEqual(self.fake.sandboxes, {})

    def test_mounts_on_create_and_fork(self):
        sb = cc.Sandbox.create(template=self.tpl.id, socket=self.fake.socket,
                               mounts=[("/srv/ws/a", "/work/a", "rw"),
                                       {"host_path": "/srv/ws/b", "guest_path": "/mnt/b"}])
        self.assertEqual(json.loads(self.last()[3])["mounts"],
                         [{"host_path": "/srv/ws/a", "guest_path": "/work/a", "mode": "rw"},
                          {"host_path": "/srv/ws/b", "guest_path": "/mnt/b"}])
        self.assertEqual([m["mode"] for m in sb.mounts], ["rw", "ro"])
        kid = sb.fork(mounts="inherit")[0]
        self.assertEqual(json.loads(self.last()[3]), {"count": 1, "mounts": "inherit"})
        self.assertEqual([m["mode"] for m in kid.mounts], ["ro", "ro"])
        same = sb.fork(mounts="inherit", mounts_mode="same")[0]
        self.assertEqual([m["mode"] for m in same.mounts], ["rw", "ro"])
        self.assertEqual(sb.fork()[0].mounts, [])
        with self.assertRaises(TypeError):
            cc.Sandbox.create(template=self.tpl.id, socket=self.fake.socket, mounts="/srv/ws")
        for s in (kid, same, sb):
            s.kill()

    def test_credentials_go_out_as_given_and_come_back_redacted(self):
        cred = {"hosts": ["api.example.test"], "header": "Authorization: Bearer {secret}",
                "secret": "s3cret-value", "env": "EXAMPLE_TOKEN"}
        sb = cc.Sandbox.create(template=self.tpl.id, socket=self.fake.socket,
                               allow_hosts=["api.example.test:443"], credentials=[cred])
        self.assertEqual(json.loads(self.last()[3])["network"]["credentials"], [cred])
        self.assertEqual(sb.network["credentials"][0]["secret"], "<redacted>")
        self.assertEqual(sb.network["credentials"][0]["env"], "EXAMPLE_TOKEN")
        sb.set_network(["api.example.test:443"], credentials=[dict(cred, secret="rotated")])
        self.assertEqual(json.loads(self.last()[3])["credentials"][0]["secret"], "rotated")
        sb.set_network(["api.example.test:443"])  # none given: all revoked
        self.assertEqual(json.loads(self.last()[3])["credentials"], [])
        with self.assertRaises(TypeError):  # one entry is not a list of entries
            cc.Sandbox.create(template=self.tpl.id, socket=self.fake.socket,
                              allow_hosts=["a.test"], credentials=cred)
        sb.kill()

    def test_template_network_default(self):
        tpl = cc.Template.create(isolation="process", rootfs="/r", socket=self.fake.socket,
                                 network={"allow_hosts": ["pypi.org:443"]})
        self.assertEqual(json.loads(self.last()[3])["network"], {"allow_hosts": ["pypi.org:443"]})
        sb = cc.Sandbox.create(template=tpl.id, socket=self.fake.socket)
        self.assertEqual(sb.network["allow_hosts"], ["pypi.org:443"])
        self.assertTrue(sb.network["internet"])
        with self.assertRaises(cc.BadRequest) as e:
            cc.Template.create(isolation="process", rootfs="/r", socket=self.fake.socket,
                               network=True)
        self.assertIn("policy object", e.exception.message)

    def test_set_network(self):
        sb = cc.Sandbox.create(template=self.tpl.id, socket=self.fake.socket)
        self.assertIs(sb.set_network(["PyPI.org.", "10.0.0.0/8:443"], ["evil.pypi.org"]), sb)
        method, path, headers, body = self.last()
        self.assertEqual((method, path), ("PUT", f"/sandboxes/{sb.id}/network"))
        self.assertEqual(headers["Content-Type"], "application/json")
        self.assertEqual(json.loads(body), {"allow_hosts": ["PyPI.org.", "10.0.0.0/8:443"],
                                            "deny_hosts": ["evil.pypi.org"],
                                            "credentials": [], "upstreams": []})
        # info is the daemon's answer (normalised names), not what was sent.
        self.assertEqual(sb.network["allow_hosts"], ["pypi.org", "10.0.0.0/8:443"])
        self.assertEqual(sb.network["proxy"], "http://127.0.0.1:3128")
        self.assertIs(sb.network, sb.info["network"])
        self.assertEqual(sb.refresh()["network"], sb.network)
        sb.set_network(internet=False)
        self.assertEqual(json.loads(self.last()[3]),
                         {"allow_hosts": [], "deny_hosts": [], "credentials": [],
                          "upstreams": [], "internet": False})
        self.assertEqual(sb.network, {"internet": False, "allow_hosts": [], "deny_hosts": [],
                                      "credentials": [], "upstreams": [],
                                      "proxy": None})
        # A refused change leaves info as it was; the message names the entry.
        with self.assertRaises(cc.BadRequest) as e:
            sb.set_network(["pypi.org", "a b"])
        self.assertEqual(e.exception.message, "network.allow_hosts[1]: 'a b' is not a host rule")
        self.assertFalse(sb.network["internet"])
        sb.pause()
        with self.assertRaises(cc.Conflict):
            sb.set_network(["pypi.org"])
        with self.assertRaises(cc.NotFound):
            cc.Sandbox({"id": "sb-000000000000"}, sb._client).set_network(["pypi.org"])

    def test_fork_network(self):
        sb = cc.Sandbox.create(template=self.tpl.id, socket=self.fake.socket,
                               allow_hosts=["pypi.org"])
        kid = sb.fork()[0]
        self.assertEqual(json.loads(self.last()[3]), {"count": 1})  # children keep the parent's
        self.assertEqual(kid.network["allow_hosts"], ["pypi.org"])
        kid.kill()
        kid = sb.fork(1, network={"internet": False})[0]
        self.assertEqual(json.loads(self.last()[3]), {"count": 1, "network": {"internet": False}})
        self.assertFalse(kid.network["internet"])
        self.assertTrue(sb.refresh()["network"]["internet"])  # the parent's is unchanged

    def test_errors(self):
        with self.assertRaises(cc.NotFound) as e:
            cc.Sandbox.create(template="tpl-000000000000", socket=self.fake.socket)
        self.assertIsInstance(e.exception, cc.CarapaceError)
        self.assertEqual(str(e.exception), "404 not_found: template tpl-000000000000 not found")
        with self.assertRaises(cc.BadRequest) as e:
            cc.Client(socket=self.fake.socket).json("POST", "/sandboxes",
                                                    {"template": self.tpl.id, "ttl": 5})
        self.assertEqual(e.exception.message, "ttl: unknown field")
        with self.assertRaises(cc.TransportError) as e:
            cc.health(socket=self.fake.socket + ".absent")
        self.assertIsNone(e.exception.status)
        self.assertIn(".absent", str(e.exception))


class ErrorClassTest(unittest.TestCase):
    def test_every_code_has_its_own_class_and_status(self):
        from carapace_client import errors
        classes = set()
        for code, status, cls in errors._CODES:
            e = errors.error_for(status, code, "m")
            self.assertIs(type(e), cls)
            self.assertEqual((e.status, e.code), (status, code))
            # The status alone finds the same class (a body without a code).
            self.assertIs(type(errors.error_for(status, None, "m")), cls)
            classes.add(cls)
            self.assertTrue(hasattr(cc, cls.__name__), cls.__name__)
        self.assertEqual(len(classes), len(errors._CODES))
        self.assertIs(type(errors.error_for(418, "teapot", "m")), cc.CarapaceError)


if __name__ == "__main__":
    unittest.main()
