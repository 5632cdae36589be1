"""The Python client (clients/python) against a real `carapace serve` with the `process` back end
and the real rootfs: exec (buffered and streamed), files, documents, pause/resume, errors, and
workspace mounts beneath the config's mount_roots."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from daemon_harness import DOC_SPEC, Daemon, DaemonTestCase, cc  # noqa: E402


class PythonClientE2E(DaemonTestCase):
    def sandbox(self):
        return cc.Sandbox.create(template=self.tpl.id, timeout=300, env={"GREETING": "hi"},
                                 client=self.daemon.client)

    def test_exec_files_documents(self):
        with self.sandbox() as sb:
            r = sb.exec("echo $GREETING; echo err >&2; exit 3")
            self.assertEqual((r.exit_code, r.stdout, r.stderr), (3, "hi\n", "err\n"),
                             self.daemon.log_tail())
            out = []
            r = sb.exec(["sh", "-c", "for i in 1 2 3; do echo line$i; done"],
                        on_stdout=out.append)
            self.assertEqual(r.exit_code, 0)
            self.assertEqual("".join(out), "line1\nline2\nline3\n")
            payload = bytes(range(256)) * 100
            sb.files.write("data/blob.bin", payload, parents=True)
            self.assertEqual(sb.files.read("data/blob.bin"), payload)
            r = sb.exec("wc -c < data/blob.bin")
            self.assertEqual(r.stdout.strip(), str(len(payload)))
            self.assertIn("blob.bin", [e["name"] for e in sb.files.list("data")])
            docx = sb.document(DOC_SPEC, "docx")
            self.assertTrue(docx.startswith(b"PK\x03\x04"), docx[:64])
            pdf = sb.document(DOC_SPEC, "pdf")
            self.assertTrue(pdf.startswith(b"%PDF"), pdf[:64])
            with self.assertRaises(cc.BadRequest):
                sb.document({"blocks": []}, "docx")  # no title
            with self.assertRaises(cc.BadRequest):
                sb.files.read("../etc/passwd")
            sb_id = sb.id
        with self.assertRaises(cc.NotFound):
            cc.Sandbox.connect(sb_id, client=self.daemon.client)

    def test_pause_resume_timeout(self):
        with self.sandbox() as sb:
            self.assertEqual(sb.pause().state, "paused")
            with self.assertRaises(cc.Conflict):
                sb.pause()
            self.assertEqual(sb.resume().state, "running")
            sb.set_timeout(60)
            self.assertEqual(sb.exec("echo back").stdout, "back\n")

    def test_unknown_template(self):
        with self.assertRaises(cc.NotFound):
            cc.Sandbox.create(template="tpl-000000000000", client=self.daemon.client)


class MountsE2E(unittest.TestCase):
    """Workspace mounts through the daemon (docs/api.md, Mounts): a folder beneath the config's
    mount root, shared read-write and without deleting, as its owner; refusals are 400s."""

    OWNER = (4242, 4243)

    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        cls.ws = os.path.join(cls.daemon.dir, "ws")
        cls.proj = os.path.join(cls.ws, "proj")
        os.makedirs(cls.proj)
        with open(os.path.join(cls.proj, "a.txt"), "w") as f:
            f.write("from the host\n")
        for path in (cls.proj, os.path.join(cls.proj, "a.txt")):
            os.chown(path, *cls.OWNER)
        os.symlink("/", os.path.join(cls.ws, "root-link"))
        cls.daemon.config = {"mount_roots": [cls.ws]}
        try:
            cls.daemon.start()
            cls.tpl = cls.daemon.process_template()
        except BaseException:
            cls.daemon.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def test_rw_and_nodelete_as_the_owner(self):
        with cc.Sandbox.create(template=self.tpl.id, client=self.daemon.client,
                               mounts=[(self.proj, "/work/proj", "rw"),
                                       (self.proj, "/mnt/keep", "rw-nodelete")]) as sb:
            self.assertEqual([m["mode"] for m in sb.mounts], ["rw", "rw-nodelete"])
            self.assertFalse(sb.info["from_pool"])
            r = sb.exec("cat /work/proj/a.txt && echo made > /work/proj/b.txt && "
                        "rm /mnt/keep/b.txt 2>&1 | grep -c 'Permission denied'")
            self.assertEqual((r.exit_code, r.stdout), (0, "from the host\n1\n"), r.stderr)
            st = os.stat(os.path.join(self.proj, "b.txt"))
            self.assertEqual((st.st_uid, st.st_gid), self.OWNER)
            with self.assertRaises(cc.Conflict):  # the process back end cannot fork
                sb.fork(mounts="inherit")

    def test_refusals_are_400(self):
        for mounts in ([(os.path.join(self.ws, "root-link"), "/work/r")],
                       [(self.proj + "/../proj", "/work/r")],
                       [("/etc", "/work/r")],
                       [(self.proj, "/proc/r")]):
            with self.assertRaises(cc.BadRequest):
                cc.Sandbox.create(template=self.tpl.id, client=self.daemon.client, mounts=mounts)
        self.assertEqual(cc.Sandbox.list(client=self.daemon.client), [])


if __name__ == "__main__":
    unittest.main()
