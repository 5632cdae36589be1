"""Each output format, from the example spec and from a ~10,000-word spec, read back and checked."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

from common import (EXAMPLE_SPEC, FORMATS, MAKE_LONG_REPORT, dir_entries, run_docgen)

import doccheck
from docgen_lib import spec as specmod

# Generous bounds: a 10,000-word report takes about a second per format on a development machine.
LONG_REPORT_LIMIT_S = 60


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class ExampleFormats(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="docgen-test-")
        cls.spec = doccheck.load_spec(EXAMPLE_SPEC)
        cls.out = {}
        for fmt in FORMATS:
            path = os.path.join(cls.tmp.name, f"report.{fmt}")
            rc, err, _ = run_docgen("--spec", EXAMPLE_SPEC, "--out", path)
            cls.out[fmt] = (path, rc, err)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def generated(self, fmt):
        path, rc, err = self.out[fmt]
        self.assertEqual(rc, 0, f"docgen {fmt} failed: {err}")
        self.assertEqual(err, "", "docgen printed something on success")
        return path

    def test_only_the_outputs_are_left(self):
        for fmt in FORMATS:
            self.generated(fmt)
        self.assertEqual(dir_entries(self.tmp.name), sorted(f"report.{f}" for f in FORMATS))

    def test_docx(self):
        import docx
        path = self.generated("docx")
        counts = doccheck.check(path, self.spec)
        self.assertEqual(counts["images"], 2)
        d = docx.Document(path)
        styles = [p.style.name for p in d.paragraphs]
        self.assertEqual(styles[0], "Title")
        self.assertIn("List Bullet 2", styles)
        self.assertIn("List Number 2", styles)
        # The first run of the emphasised sentence is bold and italic.
        runs = [r for p in d.paragraphs for r in p.runs if r.text == "No sandbox escaped its VM."]
        self.assertTrue(runs and runs[0].bold and runs[0].italic)
        # Header row of the table in bold, values as text.
        table = d.tables[0]
        self.assertTrue(all(r.bold for c in table.rows[0].cells for r in c.paragraphs[0].runs))
        self.assertEqual([c.text for c in table.rows[3].cells], ["Q3", "787", "41", "0"])
        # A page break is in the body.
        self.assertIn('w:type="page"', d.element.body.xml)

    def test_pdf(self):
        path = self.generated("pdf")
        counts = doccheck.check(path, self.spec)
        self.assertGreaterEqual(counts["pages"], 2)  # the page break
        pages = doccheck.pdf_pages(path)
        self.assertIn("Next steps", pages[-1])
        self.assertNotIn("Next steps", pages[0])
        text = "\n".join(pages)
        self.assertIn("1. Collect per-sandbox start and stop events", text)
        self.assertIn("\u2022 Warm pool hit rate: 97.2%", text)
        fonts = subprocess.run(["pdffonts", path], capture_output=True, text=True, check=True).stdout
        self.assertIn("DejaVuSans-Bold", fonts)

    def test_pptx(self):
        path = self.generated("pptx")
        counts = doccheck.check(path, self.spec)
        self.assertEqual(counts["sections"], 3)
        slides, props, n_media = doccheck.pptx_slides(path)
        self.assertEqual(slides[0][0], "Sandbox Fleet Report Q3")
        self.assertIn("Carapace Docs Agent", slides[0][1])
        titles = [t for t, _ in slides]
        self.assertEqual(titles[1], "Executive summary")
        # Level-2 headings stay inside their section's slide.
        self.assertNotIn("Method", titles)
        self.assertIn("Method", slides[1][1])
        self.assertEqual(n_media, 2)
        self.assertEqual(props["keywords"], "carapace, microVM, quarterly report")
        with zipfile.ZipFile(path) as z:
            self.assertIsNone(z.testzip())

    def test_xlsx(self):
        import openpyxl
        path = self.generated("xlsx")
        counts = doccheck.check(path, self.spec)
        self.assertEqual(counts["sheets"], 2)
        wb = openpyxl.load_workbook(path)
        ws = wb["Quarters"]
        self.assertEqual(ws.freeze_panes, "A2")
        self.assertTrue(ws["A1"].font.b)
        self.assertEqual(ws["B5"].value, "=SUM(B2:B4)")
        self.assertEqual(ws["B5"].data_type, "f")
        self.assertEqual(ws["E2"].number_format, "yyyy-mm-dd")
        s = wb["Settings"]
        self.assertEqual(s["B3"].value, "=NOT A FORMULA")
        self.assertEqual(s["B3"].data_type, "s")
        self.assertIs(s["B2"].value, True)
        self.assertEqual(s["B5"].number_format, "0.0%")

    def test_doccheck_catches_a_wrong_document(self):
        other = read_json(EXAMPLE_SPEC)
        other["blocks"][1]["runs"][0]["text"] = "Words that are not in the document "
        with tempfile.NamedTemporaryFile("w", suffix=".json", dir=os.path.dirname(EXAMPLE_SPEC),
                                         delete=False) as f:
            json.dump(other, f)
        try:
            spec = doccheck.load_spec(f.name)
            for fmt in ("docx", "pdf", "pptx"):
                with self.assertRaises(doccheck.CheckError, msg=fmt):
                    doccheck.check(self.out[fmt][0], spec)
        finally:
            os.unlink(f.name)
        other = read_json(EXAMPLE_SPEC)
        other["sheets"][0]["rows"][1][1] = 420001
        spec = specmod.validate(other, os.path.dirname(EXAMPLE_SPEC))
        with self.assertRaises(doccheck.CheckError):
            doccheck.check(self.out["xlsx"][0], spec)


class NumberedLists(unittest.TestCase):
    def test_each_numbered_list_restarts_at_one(self):
        import docx
        from docx.oxml.ns import qn
        spec = {"title": "Lists", "blocks": [
            {"type": "list", "ordered": True, "items": ["a", "b"]},
            {"type": "paragraph", "text": "between"},
            {"type": "list", "ordered": True, "items": ["c", {"text": "d", "list": {
                "ordered": True, "items": ["d1", {"text": "d2", "list": {"items": ["deep"]}}]}}]},
        ]}
        with tempfile.TemporaryDirectory() as tmp:
            spec_path = os.path.join(tmp, "s.json")
            with open(spec_path, "w") as f:
                json.dump(spec, f)
            out = os.path.join(tmp, "l.docx")
            rc, err, _ = run_docgen("--spec", spec_path, "--out", out)
            self.assertEqual(rc, 0, err)
            d = docx.Document(out)
            ids = {p.text: p._p.pPr.numPr.numId.val for p in d.paragraphs if p.style.name.startswith("List Number")}
            self.assertEqual(ids["a"], ids["b"])
            self.assertNotEqual(ids["a"], ids["c"])
            self.assertNotEqual(ids["d1"], ids["c"])
            self.assertEqual([p.style.name for p in d.paragraphs if p.text == "deep"], ["List Bullet 3"])
            numbering = d.part.numbering_part.element
            for text in ("a", "c", "d1"):
                num = [n for n in numbering.findall(qn("w:num")) if n.get(qn("w:numId")) == str(ids[text])][0]
                start = num.find(qn("w:lvlOverride") + "/" + qn("w:startOverride"))
                self.assertEqual(start.get(qn("w:val")), "1")


class SpecialText(unittest.TestCase):
    """Markup characters and non-ASCII text come out literally in every format."""

    TEXT = "Literal *stars* _under_ #hash [link](x) `code` | pipe <b>tag</b> & \\ back; Grüße — naïve ≥ 5 €"

    def test_special_characters(self):
        spec = {
            "title": "Special & <characters>",
            "metadata": {"author": "A. *Author*", "keywords": "one, two"},
            "blocks": [
                {"type": "heading", "level": 1, "text": "# Not a *heading* marker"},
                {"type": "paragraph", "runs": [{"text": self.TEXT}, {"text": " 1. bold ", "bold": True},
                                               {"text": "- dash"}]},
                {"type": "list", "ordered": True, "items": ["1. item", "- item", "> quote"]},
                {"type": "table", "header": ["a|b", "c*d"], "rows": [["<x>", "& y"]]},
            ],
        }
        with tempfile.TemporaryDirectory() as tmp:
            spec_path = os.path.join(tmp, "s.json")
            with open(spec_path, "w", encoding="utf-8") as f:
                json.dump(spec, f, ensure_ascii=False)
            checked = doccheck.load_spec(spec_path)
            for fmt in ("docx", "pdf", "pptx", "xlsx"):
                out = os.path.join(tmp, "out." + fmt)
                rc, err, _ = run_docgen("--spec", spec_path, "--out", out)
                self.assertEqual(rc, 0, f"{fmt}: {err}")
                doccheck.check(out, checked)


class LongReport(unittest.TestCase):
    """A ~10,000-word report in each format, within LONG_REPORT_LIMIT_S; prints the times."""

    def test_long_report(self):
        with tempfile.TemporaryDirectory(prefix="docgen-long-") as tmp:
            spec_path = os.path.join(tmp, "long.json")
            proc = subprocess.run([sys.executable, MAKE_LONG_REPORT, "--out", spec_path],
                                  capture_output=True, text=True, check=True)
            words = int(proc.stderr.split()[1])
            self.assertGreaterEqual(words, 10000)
            spec = doccheck.load_spec(spec_path)
            times = {}
            for fmt in FORMATS:
                out = os.path.join(tmp, "long." + fmt)
                rc, err, seconds = run_docgen("--spec", spec_path, "--out", out)
                self.assertEqual(rc, 0, f"{fmt}: {err}")
                times[fmt] = seconds
                self.assertLess(seconds, LONG_REPORT_LIMIT_S, f"{fmt} took {seconds:.1f} s")
                doccheck.check(out, spec)
            print(f"\n  {words}-word report: " +
                  ", ".join(f"{fmt} {t:.2f} s" for fmt, t in times.items()), file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
