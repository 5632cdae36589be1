"""The Python client (clients/python) against a real `carapace serve` with the `process` back end
and the real rootfs: exec (buffered and streamed), files, documents, pause/resume, errors."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from daemon_harness import DOC_SPEC, DaemonTestCase, cc  # noqa: E402


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


if __name__ == "__main__":
    unittest.main()
