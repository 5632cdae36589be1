#!/usr/bin/python3
"""Reads documents made by docgen back and checks them against their spec.

    doccheck.py --spec SPEC.json FILE...        (exit 0: all good; 1: a check failed)

DOCX is read with python-docx, XLSX with openpyxl, PDF with `pdftotext` (poppler-utils) and PPTX
by unzipping its slide XML. Each check looks for the spec's text in the document: the title, every
heading, paragraph, list item, table cell and caption (blocks; DOCX, PDF, PPTX), or every sheet and
typed cell value (XLSX), and the document properties. Used by the unit tests and by the image tests
(tests/image), which validate documents produced inside the guest image.
"""

import argparse
import datetime
import os
import subprocess
import sys
import unicodedata
import zipfile
from xml.etree import ElementTree

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from docgen_lib import spec as specmod  # noqa: E402


class CheckError(AssertionError):
    pass


def norm(text):
    return " ".join(unicodedata.normalize("NFC", text).split())


def runs_text(runs):
    return "".join(r["text"] for r in runs)


def expected_texts(spec):
    """Every piece of text the blocks of `spec` should show, normalised, in document order."""
    out = [norm(spec.title)]

    def walk_list(lst):
        for item in lst["items"]:
            out.append(norm(runs_text(item["runs"])))
            if item["list"]:
                walk_list(item["list"])

    for b in spec.blocks:
        t = b["type"]
        if t == "heading":
            out.append(norm(b["text"]))
        elif t == "paragraph":
            out.append(norm(runs_text(b["runs"])))
        elif t == "list":
            walk_list(b)
        elif t == "table":
            out += [norm(c) for c in b["header"]]
            out += [norm(c) for row in b["rows"] for c in row]
            if b["caption"]:
                out.append(norm(b["caption"]))
        elif t == "image" and b["caption"]:
            out.append(norm(b["caption"]))
    return [x for x in out if x]


def _require_all(found_text, wanted, what, path):
    missing = [w for w in wanted if w not in found_text]
    if missing:
        sample = "; ".join(repr(m[:60]) for m in missing[:5])
        raise CheckError(f"{path}: {len(missing)} of {len(wanted)} expected texts missing from the "
                         f"{what}, e.g. {sample}")


def _require_props(path, got, spec):
    want = {"title": spec.title, "author": spec.metadata["author"] or "",
            "subject": spec.metadata["subject"] or "",
            "keywords": ", ".join(spec.metadata["keywords"])}
    for key, value in want.items():
        if norm(got.get(key) or "") != norm(value):
            raise CheckError(f"{path}: document property {key} is {got.get(key)!r}, expected {value!r}")


# --- DOCX ------------------------------------------------------------------------------------------
def check_docx(path, spec):
    import docx
    d = docx.Document(path)
    parts = [p.text for p in d.paragraphs]
    for table in d.tables:
        for row in table.rows:
            parts += [c.text for c in row.cells]
    text = norm("\n".join(parts))
    _require_all(text, expected_texts(spec), "DOCX text", path)
    cp = d.core_properties
    _require_props(path, {"title": cp.title, "author": cp.author, "subject": cp.subject,
                          "keywords": cp.keywords}, spec)
    headings = [(p.style.name, norm(p.text)) for p in d.paragraphs if p.style.name.startswith("Heading")]
    want = [(f"Heading {b['level']}", norm(b["text"])) for b in spec.blocks if b["type"] == "heading"]
    if headings != want:
        raise CheckError(f"{path}: headings {headings[:5]}... differ from the spec's {want[:5]}...")
    n_tables = sum(1 for b in spec.blocks if b["type"] == "table")
    if len(d.tables) != n_tables:
        raise CheckError(f"{path}: {len(d.tables)} tables, expected {n_tables}")
    n_images = sum(1 for b in spec.blocks if b["type"] == "image")
    if len(d.inline_shapes) != n_images:
        raise CheckError(f"{path}: {len(d.inline_shapes)} images, expected {n_images}")
    want_bold = [norm(r["text"]) for b in spec.blocks if b["type"] == "paragraph"
                 for r in b["runs"] if r["bold"] and r["text"].strip()]
    got_bold = {norm(r.text) for p in d.paragraphs for r in p.runs if r.bold}
    missing = [w for w in want_bold if w not in got_bold]
    if missing:
        raise CheckError(f"{path}: bold runs missing: {missing[:3]}")
    return {"paragraphs": len(d.paragraphs), "tables": len(d.tables), "images": len(d.inline_shapes)}


# --- PDF -------------------------------------------------------------------------------------------
def pdf_pages(path):
    try:
        # -raw: text in content-stream order, which for docgen's PDFs is reading order; the
        # default layout analysis drops narrow spaces on short lines ("a & y" -> "a&y").
        out = subprocess.run(["pdftotext", "-raw", "-enc", "UTF-8", path, "-"], capture_output=True,
                             check=True, timeout=300).stdout.decode("utf-8")
    except FileNotFoundError:
        raise CheckError("pdftotext not found (apt-get install poppler-utils)")
    except subprocess.CalledProcessError as e:
        raise CheckError(f"{path}: pdftotext failed: {e.stderr.decode(errors='replace').strip()}")
    pages = out.split("\f")
    if pages and not pages[-1].strip():
        pages.pop()
    cleaned = []
    for i, page in enumerate(pages, start=1):
        lines = [line for line in page.split("\n") if line.strip()]
        # docgen's footer, the page number, is drawn first on each page.
        if lines and lines[0].strip() == str(i):
            lines.pop(0)
        elif lines and lines[-1].strip() == str(i):
            lines.pop()
        cleaned.append("\n".join(lines))
    return cleaned


def pdf_info(path):
    out = subprocess.run(["pdfinfo", "-enc", "UTF-8", path], capture_output=True, check=True,
                         timeout=60).stdout.decode("utf-8")
    info = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        info[key.strip().lower()] = value.strip()
    return info


def check_pdf(path, spec):
    pages = pdf_pages(path)
    text = norm("\n".join(pages))
    _require_all(text, expected_texts(spec), "PDF text", path)
    info = pdf_info(path)
    _require_props(path, info, spec)
    return {"pages": len(pages)}


# --- PPTX ------------------------------------------------------------------------------------------
NS = {"a": "http://schemas.openxmlformats.org/drawingml/2006/main",
      "p": "http://schemas.openxmlformats.org/presentationml/2006/main",
      "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
      "dc": "http://purl.org/dc/elements/1.1/",
      "cp": "http://schemas.openxmlformats.org/package/2006/metadata/core-properties"}


def pptx_slides(path):
    """[(title, [paragraph texts])] in presentation order."""
    with zipfile.ZipFile(path) as z:
        pres = ElementTree.fromstring(z.read("ppt/presentation.xml"))
        rels = ElementTree.fromstring(z.read("ppt/_rels/presentation.xml.rels"))
        targets = {r.get("Id"): r.get("Target") for r in rels}
        slides = []
        for sld in pres.iterfind("p:sldIdLst/p:sldId", NS):
            target = targets[sld.get(f"{{{NS['r']}}}id")]
            root = ElementTree.fromstring(z.read("ppt/" + target.lstrip("/").replace("ppt/", "", 1)))
            title, paras = None, []
            for sp in root.iter(f"{{{NS['p']}}}sp"):
                ph = sp.find("p:nvSpPr/p:nvPr/p:ph", NS)
                texts = ["".join(t.text or "" for t in p.iter(f"{{{NS['a']}}}t"))
                         for p in sp.iter(f"{{{NS['a']}}}p")]
                texts = [norm(t) for t in texts if norm(t)]
                if ph is not None and ph.get("type") in ("title", "ctrTitle") and title is None:
                    title = " ".join(texts)
                else:
                    paras += texts
            # Tables are graphic frames; their cells hold a:p elements too.
            for gf in root.iter(f"{{{NS['p']}}}graphicFrame"):
                for p in gf.iter(f"{{{NS['a']}}}p"):
                    t = norm("".join(x.text or "" for x in p.iter(f"{{{NS['a']}}}t")))
                    if t:
                        paras.append(t)
            slides.append((title, paras))
        core = ElementTree.fromstring(z.read("docProps/core.xml"))
        props = {"title": core.findtext("dc:title", "", NS), "author": core.findtext("dc:creator", "", NS),
                 "subject": core.findtext("dc:subject", "", NS),
                 "keywords": core.findtext("cp:keywords", "", NS)}
        n_media = len([n for n in z.namelist() if n.startswith("ppt/media/")])
    return slides, props, n_media


def check_pptx(path, spec):
    slides, props, n_media = pptx_slides(path)
    text = norm(" ".join((t or "") + " " + " ".join(p) for t, p in slides))
    _require_all(text, expected_texts(spec), "PPTX text", path)
    _require_props(path, props, spec)
    if not slides or norm(slides[0][0] or "") != norm(spec.title):
        raise CheckError(f"{path}: the first slide's title is {slides[0][0] if slides else None!r}, "
                         f"expected the document title {spec.title!r}")
    h1 = [norm(b["text"]) for b in spec.blocks if b["type"] == "heading" and b["level"] == 1]
    titles = [norm(t or "") for t, _ in slides[1:]]
    got_h1 = [t for t in titles if t in h1]
    if got_h1 != h1:
        raise CheckError(f"{path}: level-1 sections should each start a slide; slide titles "
                         f"{titles[:8]}..., level-1 headings {h1[:8]}...")
    n_images = len({b["data"] for b in spec.blocks if b["type"] == "image"})
    if n_media < min(n_images, 1):
        raise CheckError(f"{path}: no images in ppt/media, expected {n_images}")
    return {"slides": len(slides), "sections": len(h1)}


# --- XLSX ------------------------------------------------------------------------------------------
def check_xlsx(path, spec):
    import openpyxl
    wb = openpyxl.load_workbook(path)
    sheets = spec.sheets
    if not sheets:  # derived from the table blocks, as docgen does
        sheets = specmod._sheets_from_tables(spec.blocks)
    names = [ws.title for ws in wb.worksheets]
    want_names = [s["name"] for s in sheets]
    if names != want_names:
        raise CheckError(f"{path}: sheets {names}, expected {want_names}")
    n_cells = 0
    for sheet in sheets:
        ws = wb[sheet["name"]]
        for r, row in enumerate(sheet["rows"], start=1):
            for c, cell in enumerate(row, start=1):
                got = ws.cell(row=r, column=c)
                where = f"{path}: sheet {sheet['name']!r} {got.coordinate}"
                if cell is None:
                    if got.value is not None:
                        raise CheckError(f"{where}: expected empty, got {got.value!r}")
                    continue
                n_cells += 1
                _check_cell(where, got, cell)
        widths = sheet["column_widths"]
        for c, w in enumerate(widths, start=1):
            if w is not None:
                got_w = ws.column_dimensions[openpyxl.utils.get_column_letter(c)].width
                if abs((got_w or 0) - w) > 0.01:
                    raise CheckError(f"{path}: sheet {sheet['name']!r} column {c} width {got_w}, expected {w}")
    p = wb.properties
    _require_props(path, {"title": p.title, "author": p.creator, "subject": p.subject,
                          "keywords": p.keywords}, spec)
    return {"sheets": len(names), "cells": n_cells}


def _check_cell(where, got, cell):
    t, v = cell["type"], cell["value"]
    if t == "formula":
        ok = got.data_type == "f" and got.value == v
    elif t == "string":
        ok = got.data_type in ("s", "inlineStr") and got.value == v
    elif t == "bool":
        ok = got.data_type == "b" and got.value is v
    elif t == "number":
        ok = got.data_type == "n" and not isinstance(got.value, bool) and got.value == v
    elif t == "date":
        want = v if isinstance(v, datetime.datetime) else datetime.datetime.combine(v, datetime.time())
        ok = got.is_date and got.value == want
    else:
        ok = False
    if not ok:
        raise CheckError(f"{where}: expected {t} {v!r}, got {got.data_type} {got.value!r}")
    if cell["number_format"] and got.number_format != cell["number_format"]:
        raise CheckError(f"{where}: number format {got.number_format!r}, expected {cell['number_format']!r}")


CHECKS = {".docx": check_docx, ".pdf": check_pdf, ".pptx": check_pptx, ".xlsx": check_xlsx}


def check(path, spec):
    """Checks one document against a validated Spec; returns a dict of counts or raises CheckError."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in CHECKS:
        raise CheckError(f"{path}: unknown document type")
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        raise CheckError(f"{path}: missing or empty")
    return CHECKS[ext](path, spec)


def load_spec(spec_path, fmt=None):
    data, base_dir = specmod.load(spec_path)
    return specmod.validate(data, base_dir, fmt)


def main():
    p = argparse.ArgumentParser(description="Checks docgen documents against their spec.")
    p.add_argument("--spec", required=True)
    p.add_argument("files", nargs="+")
    args = p.parse_args()
    spec = load_spec(args.spec)
    failed = 0
    for f in args.files:
        try:
            counts = check(f, spec)
            print(f"doccheck: OK {f} " + " ".join(f"{k}={v}" for k, v in counts.items()))
        except CheckError as e:
            print(f"doccheck: FAIL {e}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
