"""PPTX output: the spec becomes pandoc markdown, `pandoc -t pptx --slide-level=1` makes one slide
per level-1 section (plus a title slide); level-2/3 headings become headings inside a slide."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from xml.sax.saxutils import escape as xml_escape

PANDOC_TIMEOUT_S = 600

# Every ASCII punctuation character can be backslash-escaped in pandoc markdown
# (extension all_symbols_escapable), which makes any text literal.
_PUNCT = re.compile(r"([!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])")


class PandocError(Exception):
    pass


def md_escape(text):
    return _PUNCT.sub(r"\\\1", " ".join(text.split()))


def md_runs(runs):
    out = []
    for r in runs:
        text = r["text"]
        core = " ".join(text.split())
        if not core:
            out.append(" " if text else "")
            continue
        lead, trail = text[:1].isspace(), text[-1:].isspace()
        s = md_escape(core)
        if r["bold"] and r["italic"]:
            s = f"***{s}***"
        elif r["bold"]:
            s = f"**{s}**"
        elif r["italic"]:
            s = f"*{s}*"
        out.append(("" if not lead else " ") + s + ("" if not trail else " "))
    return re.sub(r" {2,}", " ", "".join(out)).strip()


def to_markdown(spec, image_dir):
    meta = spec.metadata
    lines = ["---", "title: " + json.dumps(md_escape(spec.title))]
    if meta["author"]:
        lines.append("author: " + json.dumps(md_escape(meta["author"])))
    if meta["subject"]:
        lines.append("subject: " + json.dumps(md_escape(meta["subject"])))
    if meta["keywords"]:
        lines.append("keywords: " + json.dumps([md_escape(k) for k in meta["keywords"]]))
    lines += ["---", ""]
    n_images = 0
    for block in spec.blocks:
        t = block["type"]
        if t == "heading":
            lines += ["#" * block["level"] + " " + md_escape(block["text"]), ""]
        elif t == "paragraph":
            text = md_runs(block["runs"])
            if text:
                lines += [text, ""]
        elif t == "list":
            _md_list(block, 0, lines)
            lines.append("")
        elif t == "table":
            lines += _md_table(block)
        elif t == "image":
            n_images += 1
            path = os.path.join(image_dir, f"image{n_images}.{'png' if block['kind'] == 'png' else 'jpg'}")
            with open(path, "wb") as f:
                f.write(block["data"])
            caption = md_escape(block["caption"] or "")
            attrs = f"{{width={block['width_cm']:.2f}cm}}" if block["width_cm"] else ""
            # The path goes in angle brackets so it needs no escaping.
            lines += [f"![{caption}](<{path}>){attrs}", ""]
        elif t == "page_break":
            pass  # slides have no page breaks
    return "\n".join(lines) + "\n"


def _md_list(lst, depth, lines):
    indent = "    " * depth
    for item in lst["items"]:
        marker = "1." if lst["ordered"] else "-"
        text = md_runs(item["runs"]) or "\\ "
        lines.append(f"{indent}{marker}{' ' if lst['ordered'] else '   '}{text}")
        if item["list"] is not None:
            _md_list(item["list"], depth + 1, lines)


def _md_table(block):
    def row(cells):
        return "| " + " | ".join(md_escape(c) or " " for c in cells) + " |"
    out = [row(block["header"]), "|" + "|".join("---" for _ in block["header"]) + "|"]
    out += [row(r) for r in block["rows"]]
    out.append("")
    if block["caption"]:
        out += [": " + md_escape(block["caption"]), ""]
    return out


def write(spec, out):
    pandoc = shutil.which("pandoc")
    if pandoc is None:
        raise PandocError("pandoc is not installed (needed for .pptx output)")
    with tempfile.TemporaryDirectory(prefix="docgen-pptx-") as tmp:
        md_path = os.path.join(tmp, "slides.md")
        with open(md_path, "w", encoding="utf-8") as f:
            f.write(to_markdown(spec, tmp))
        env = dict(os.environ)
        env["LC_ALL"] = "C.UTF-8"
        env.setdefault("HOME", tmp)
        cmd = [pandoc, "--from=markdown", "--to=pptx", "--slide-level=1", "--output", out, md_path]
        try:
            proc = subprocess.run(cmd, env=env, cwd=tmp, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=PANDOC_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise PandocError(f"pandoc did not finish within {PANDOC_TIMEOUT_S} s")
        if proc.returncode != 0:
            raise PandocError(f"pandoc failed (exit {proc.returncode}): {proc.stderr.strip()}")
    _set_core_properties(out, spec)


def _set_core_properties(path, spec):
    """pandoc 2.17 writes only the title and author to docProps/core.xml: rewrite it with the
    subject and keywords as well."""
    meta = spec.metadata
    core = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" '
        'xmlns:dcmitype="http://purl.org/dc/dcmitype/" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
        f"<dc:title>{xml_escape(spec.title)}</dc:title>"
        f"<dc:subject>{xml_escape(meta['subject'] or '')}</dc:subject>"
        f"<dc:creator>{xml_escape(meta['author'] or '')}</dc:creator>"
        f"<cp:keywords>{xml_escape(', '.join(meta['keywords']))}</cp:keywords>"
        f"<cp:lastModifiedBy>{xml_escape(meta['author'] or '')}</cp:lastModifiedBy>"
        "</cp:coreProperties>"
    )
    tmp = path + ".core"
    try:
        with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
            names = src.namelist()
            for info in src.infolist():
                data = src.read(info.filename)
                if info.filename == "docProps/core.xml":
                    data = core.encode("utf-8")
                dst.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
            if "docProps/core.xml" not in names:
                dst.writestr("docProps/core.xml", core.encode("utf-8"))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
