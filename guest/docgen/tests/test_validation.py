"""Invalid specs and failures: exit status, the JSON path in the message, and no file left behind."""

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from common import DOCGEN, EXAMPLE_SPEC, EXAMPLES, FORMATS, dir_entries, run_docgen

from docgen_lib import spec as specmod

PNG_1x1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def minimal(**extra):
    spec = {"title": "T", "blocks": [{"type": "paragraph", "text": "x"}]}
    spec.update(extra)
    return spec


class InvalidSpecs(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="docgen-invalid-")
        with open(os.path.join(self.tmp, "pic.png"), "wb") as f:
            f.write(PNG_1x1)
        with open(os.path.join(self.tmp, "notes.txt"), "w") as f:
            f.write("not an image")
        self.before = None

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write_spec(self, spec, name="spec.json"):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            if isinstance(spec, str):
                f.write(spec)
            else:
                json.dump(spec, f)
        return path

    def assertInvalid(self, spec, path, why, formats=FORMATS):
        """docgen exits 2 for every format, names `path` and says `why`, and writes nothing."""
        spec_path = self.write_spec(spec)
        before = dir_entries(self.tmp)
        for fmt in formats:
            out = os.path.join(self.tmp, "out." + fmt)
            rc, err, _ = run_docgen("--spec", spec_path, "--out", out)
            self.assertEqual(rc, 2, f"{fmt}: exit {rc}, stderr: {err}")
            lines = [line for line in err.splitlines() if line]
            prefix = f"docgen: invalid spec: {path}: "
            matching = [line for line in lines if line.startswith(prefix)]
            self.assertTrue(matching, f"{fmt}: no message for {path!r} in:\n{err}")
            self.assertIn(why, matching[0], f"{fmt}: {err}")
            self.assertEqual(dir_entries(self.tmp), before, f"{fmt}: files were left behind")

    # --- the cases named in the issue ---------------------------------------------------------
    def test_missing_title(self):
        self.assertInvalid({"blocks": []}, "title", "required field is missing")

    def test_empty_title(self):
        self.assertInvalid({"title": "  "}, "title", "must not be empty")

    def test_bad_block_type(self):
        spec = minimal(blocks=[{"type": "paragraph", "text": "ok"}, {"type": "chart", "data": []}])
        self.assertInvalid(spec, "blocks[1].type", "unknown block type 'chart'")

    def test_bad_cell_type(self):
        spec = minimal(sheets=[{"name": "S", "rows": [[1], [2, 3, {"type": "money", "value": 5}]]}])
        self.assertInvalid(spec, "sheets[0].rows[1][2].type", 'unknown cell type "money"')

    def test_table_row_length_mismatch(self):
        spec = minimal(blocks=[{"type": "heading", "level": 1, "text": "h"},
                               {"type": "paragraph", "text": "p"},
                               {"type": "list", "items": ["i"]},
                               {"type": "table", "header": ["a", "b", "c"],
                                "rows": [["1", "2", "3"], ["1", "2"]]}])
        self.assertInvalid(spec, "blocks[3].rows[1]", "row has 2 cells, the header has 3")

    def test_image_not_found(self):
        spec = minimal(blocks=[{"type": "paragraph", "text": "p"},
                               {"type": "image", "path": "missing.png"}])
        self.assertInvalid(spec, "blocks[1].path", "image file not found")

    # --- more ----------------------------------------------------------------------------------
    def test_image_not_an_image(self):
        self.assertInvalid(minimal(blocks=[{"type": "image", "path": "notes.txt"}]),
                           "blocks[0].path", "not a PNG or JPEG image")

    def test_image_bad_base64(self):
        self.assertInvalid(minimal(blocks=[{"type": "image", "data": "@@not base64@@"}]),
                           "blocks[0].data", "not valid base64")

    def test_image_base64_not_png(self):
        data = base64.b64encode(b"GIF89a" + b"\0" * 20).decode()
        self.assertInvalid(minimal(blocks=[{"type": "image", "data": data}]),
                           "blocks[0].data", "not a PNG image")

    def test_image_path_and_data(self):
        data = base64.b64encode(PNG_1x1).decode()
        self.assertInvalid(minimal(blocks=[{"type": "image", "path": "pic.png", "data": data}]),
                           "blocks[0]", "exactly one of 'path'")

    def test_image_width(self):
        self.assertInvalid(minimal(blocks=[{"type": "image", "path": "pic.png", "width_cm": 0}]),
                           "blocks[0].width_cm", "above 0")

    def test_heading_level(self):
        self.assertInvalid(minimal(blocks=[{"type": "heading", "level": 4, "text": "x"}]),
                           "blocks[0].level", "must be 1, 2 or 3")

    def test_unknown_field(self):
        self.assertInvalid(minimal(blocks=[{"type": "paragraph", "text": "x", "colour": "red"}]),
                           "blocks[0].colour", "unknown field")

    def test_unknown_top_level_field(self):
        self.assertInvalid(minimal(block=[]), "block", "unknown field")

    def test_paragraph_text_and_runs(self):
        self.assertInvalid(minimal(blocks=[{"type": "paragraph", "text": "x", "runs": ["y"]}]),
                           "blocks[0]", "exactly one of 'text'")

    def test_run_bold_not_boolean(self):
        spec = minimal(blocks=[{"type": "paragraph", "runs": [{"text": "a"}, {"text": "b", "bold": "yes"}]}])
        self.assertInvalid(spec, "blocks[0].runs[1].bold", "must be true or false")

    def test_list_too_deep(self):
        deep = {"items": [{"text": "3", "list": {"items": [{"text": "4", "list": {"items": ["5"]}}]}}]}
        spec = minimal(blocks=[{"type": "list", "items": [{"text": "1", "list": deep}]}])
        self.assertInvalid(spec, "blocks[0].items[0].list.items[0].list.items[0].list",
                           "at most 3 levels")

    def test_list_item_type(self):
        self.assertInvalid(minimal(blocks=[{"type": "list", "items": ["a", 5]}]),
                           "blocks[0].items[1]", "must be a string or an object")

    def test_table_cell_object(self):
        spec = minimal(blocks=[{"type": "table", "header": ["a"], "rows": [[{"x": 1}]]}])
        self.assertInvalid(spec, "blocks[0].rows[0][0]", "a table cell must be")

    def test_metadata_keywords(self):
        self.assertInvalid(minimal(metadata={"keywords": ["a", 3]}), "metadata.keywords[1]",
                           "must be a string")

    def test_formula_without_equals(self):
        spec = minimal(sheets=[{"name": "S", "rows": [[{"type": "formula", "value": "SUM(A1:A2)"}]]}])
        self.assertInvalid(spec, "sheets[0].rows[0][0].value", "starting with '='")

    def test_bad_date(self):
        spec = minimal(sheets=[{"name": "S", "rows": [[{"type": "date", "value": "31/12/2026"}]]}])
        self.assertInvalid(spec, "sheets[0].rows[0][0].value", "ISO date")

    def test_number_cell_with_string(self):
        spec = minimal(sheets=[{"name": "S", "rows": [[{"type": "number", "value": "12"}]]}])
        self.assertInvalid(spec, "sheets[0].rows[0][0].value", "needs a finite number")

    def test_duplicate_sheet_name(self):
        spec = minimal(sheets=[{"name": "Data", "rows": []}, {"name": "data", "rows": []}])
        self.assertInvalid(spec, "sheets[1].name", "duplicate sheet name")

    def test_sheet_name_characters(self):
        self.assertInvalid(minimal(sheets=[{"name": "a/b", "rows": []}]), "sheets[0].name",
                           "cannot contain /")

    def test_column_width(self):
        spec = minimal(sheets=[{"name": "S", "rows": [], "column_widths": [10, -1]}])
        self.assertInvalid(spec, "sheets[0].column_widths[1]", "above 0")

    def test_xlsx_needs_sheets_or_tables(self):
        self.assertInvalid(minimal(), "sheets", "required for .xlsx output", formats=("xlsx",))

    def test_not_json(self):
        self.assertInvalid('{"title": "x",\n "blocks": [}', "(spec)", "not valid JSON")
        _, err, _ = run_docgen("--spec", os.path.join(self.tmp, "spec.json"), "--out",
                               os.path.join(self.tmp, "x.pdf"))
        self.assertIn("line 2 column", err)

    def test_nan_is_rejected(self):
        self.assertInvalid('{"title": "x", "sheets": [{"name": "s", "rows": [[NaN]]}]}', "(spec)",
                           "NaN is not allowed")

    def test_spec_not_an_object(self):
        self.assertInvalid("[1, 2]", "(spec)", "must be a JSON object")

    def test_every_error_is_reported(self):
        spec = {"blocks": [{"type": "nope"}, {"type": "heading", "level": 9, "text": "x"}]}
        path = self.write_spec(spec)
        rc, err, _ = run_docgen("--spec", path, "--out", os.path.join(self.tmp, "o.docx"))
        self.assertEqual(rc, 2)
        for where in ("title:", "blocks[0].type:", "blocks[1].level:"):
            self.assertIn(f"docgen: invalid spec: {where}", err)


class Usage(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="docgen-usage-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_unsupported_extension(self):
        rc, err, _ = run_docgen("--spec", EXAMPLE_SPEC, "--out", os.path.join(self.tmp, "x.odt"))
        self.assertEqual(rc, 2)
        self.assertIn("unsupported extension '.odt'", err)
        self.assertEqual(dir_entries(self.tmp), [])

    def test_missing_spec_file(self):
        rc, err, _ = run_docgen("--spec", os.path.join(self.tmp, "nope.json"), "--out",
                                os.path.join(self.tmp, "x.pdf"))
        self.assertEqual(rc, 2)
        self.assertIn("not found", err)
        self.assertEqual(dir_entries(self.tmp), [])

    def test_missing_arguments(self):
        rc, err, _ = run_docgen("--out", os.path.join(self.tmp, "x.pdf"))
        self.assertEqual(rc, 2)
        self.assertIn("--spec", err)

    def test_check_only(self):
        rc, err, _ = run_docgen("--spec", EXAMPLE_SPEC, "--check")
        self.assertEqual((rc, err), (0, ""))

    def test_spec_from_stdin(self):
        out = os.path.join(self.tmp, "s.docx")
        rc, err, _ = run_docgen("--spec", "-", "--out", out, stdin=json.dumps(minimal()))
        self.assertEqual(rc, 0, err)
        self.assertTrue(os.path.getsize(out) > 0)

    def test_invalid_spec_keeps_an_existing_output(self):
        out = os.path.join(self.tmp, "keep.pdf")
        with open(out, "w") as f:
            f.write("previous")
        spec = os.path.join(self.tmp, "bad.json")
        with open(spec, "w") as f:
            json.dump({"title": 5}, f)
        rc, _, _ = run_docgen("--spec", spec, "--out", out)
        self.assertEqual(rc, 2)
        with open(out) as f:
            self.assertEqual(f.read(), "previous")
        self.assertEqual(dir_entries(self.tmp), ["bad.json", "keep.pdf"])

    def test_output_directory_missing(self):
        rc, err, _ = run_docgen("--spec", EXAMPLE_SPEC, "--out", os.path.join(self.tmp, "no", "x.pdf"))
        self.assertEqual(rc, 1)
        self.assertIn("does not exist", err)

    def test_generation_failure_leaves_nothing(self):
        # pandoc is not on PATH: the PPTX writer fails after the temporary file was created.
        env = dict(os.environ, PATH=self.tmp)
        out = os.path.join(self.tmp, "x.pptx")
        rc, err, _ = run_docgen("--spec", EXAMPLE_SPEC, "--out", out, env=env)
        self.assertEqual(rc, 1, err)
        self.assertIn("pandoc", err)
        self.assertEqual(dir_entries(self.tmp), [])

    def test_killed_generation_leaves_nothing(self):
        # SIGTERM while a long report is being written: the temporary file is removed.
        spec = os.path.join(self.tmp, "long.json")
        subprocess.run([os.path.join(EXAMPLES, "make_long_report.py"), "--words", "40000", "--out", spec],
                       check=True, capture_output=True)
        out = os.path.join(self.tmp, "long.pdf")
        proc = subprocess.Popen([DOCGEN, "--spec", spec, "--out", out], stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(n.startswith(".long.pdf.") for n in os.listdir(self.tmp)):
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
        self.assertNotEqual(proc.returncode, 0)
        self.assertEqual(dir_entries(self.tmp), ["long.json"])


class ValidatorApi(unittest.TestCase):
    def test_paths_in_nested_lists(self):
        data = {"title": "t", "blocks": [{"type": "list", "items": [
            "a", {"text": "b", "list": {"ordered": True, "items": [{"runs": [{"txt": "x"}]}]}}]}]}
        with self.assertRaises(specmod.SpecErrors) as cm:
            specmod.validate(data, ".")
        paths = [e.path for e in cm.exception.errors]
        self.assertIn("blocks[0].items[1].list.items[0].runs[0].text", paths)
        self.assertIn("blocks[0].items[1].list.items[0].runs[0].txt", paths)

    def test_shorthand_cells(self):
        spec = specmod.validate({"title": "t", "sheets": [{"name": "s", "rows": [
            [None, True, 1.5, "text", "=A1+1", "="]]}]}, ".")
        types = [c and c["type"] for c in spec.sheets[0]["rows"][0]]
        self.assertEqual(types, [None, "bool", "number", "string", "formula", "string"])

    def test_xlsx_from_tables(self):
        spec = specmod.validate({"title": "t", "blocks": [
            {"type": "table", "caption": "Sales: 2026/Q1", "header": ["a", "b"], "rows": [["x", "1,200"]]},
            {"type": "table", "header": ["c"], "rows": [["2.5"]]}]}, ".", "xlsx")
        self.assertEqual([s["name"] for s in spec.sheets], ["Sales_ 2026_Q1", "Table 2"])
        self.assertEqual(spec.sheets[0]["rows"][1][1], {"type": "number", "value": 1200,
                                                         "number_format": None, "bold": False})

    def test_schema_accepts_the_examples_and_rejects_bad_specs(self):
        import jsonschema
        with open(os.path.join(os.path.dirname(EXAMPLES), "spec.schema.json")) as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        v = jsonschema.Draft202012Validator(schema)
        with open(EXAMPLE_SPEC) as f:
            self.assertEqual([e.message for e in v.iter_errors(json.load(f))], [])
        bad = [
            {"blocks": []},
            {"title": "t", "blocks": [{"type": "chart"}]},
            {"title": "t", "sheets": [{"name": "s", "rows": [[{"type": "money", "value": 1}]]}]},
            {"title": "t", "blocks": [{"type": "list", "items": [{"text": "a", "list": {"items": ["b"], "x": 1}}]}]},
        ]
        for spec in bad:
            self.assertTrue(list(v.iter_errors(spec)), f"schema accepted {spec}")


if __name__ == "__main__":
    unittest.main()
