"""DOCX output with python-docx."""

import io

from docx import Document
from docx.enum.text import WD_ALIGN_PARAGRAPH
from docx.oxml.ns import qn
from docx.shared import Cm

# Text width of the default template's page (Letter, 1" margins is 16.5 cm; A4 here, 2.5 cm margins).
PAGE_WIDTH_CM = 21.0
PAGE_HEIGHT_CM = 29.7
MARGIN_CM = 2.5
TEXT_WIDTH_CM = PAGE_WIDTH_CM - 2 * MARGIN_CM
PX_PER_CM = 96 / 2.54  # images are placed at 96 dpi unless they do not fit


def write(spec, out):
    doc = Document()
    section = doc.sections[0]
    section.page_width, section.page_height = Cm(PAGE_WIDTH_CM), Cm(PAGE_HEIGHT_CM)
    for side in ("left_margin", "right_margin", "top_margin", "bottom_margin"):
        setattr(section, side, Cm(MARGIN_CM))

    props = doc.core_properties
    props.title = spec.title
    props.author = spec.metadata["author"] or ""
    props.subject = spec.metadata["subject"] or ""
    props.keywords = ", ".join(spec.metadata["keywords"])
    props.comments = ""
    props.last_modified_by = props.author

    doc.add_heading(spec.title, 0)
    numbering = _Numbering(doc)
    for block in spec.blocks:
        t = block["type"]
        if t == "heading":
            doc.add_heading(block["text"], block["level"])
        elif t == "paragraph":
            _add_runs(doc.add_paragraph(), block["runs"])
        elif t == "list":
            _add_list(doc, numbering, block, 1)
        elif t == "table":
            _add_table(doc, block)
        elif t == "image":
            _add_image(doc, block)
        elif t == "page_break":
            doc.add_page_break()
    doc.save(out)


def _add_runs(paragraph, runs):
    for r in runs:
        if not r["text"]:
            continue
        run = paragraph.add_run(r["text"])
        if r["bold"]:
            run.bold = True
        if r["italic"]:
            run.italic = True


def _add_list(doc, numbering, lst, depth):
    suffix = "" if depth == 1 else f" {depth}"
    style = ("List Number" if lst["ordered"] else "List Bullet") + suffix
    num_id = numbering.restart(doc.styles[style]) if lst["ordered"] else None
    for item in lst["items"]:
        p = doc.add_paragraph(style=style)
        if num_id is not None:
            numbering.apply(p, num_id)
        _add_runs(p, item["runs"])
        if item["list"] is not None:
            _add_list(doc, numbering, item["list"], depth + 1)


class _Numbering:
    """Restarts numbered lists: every numbered list gets its own w:num (a startOverride of the
    style's abstract numbering), otherwise Word continues the count across lists."""

    def __init__(self, doc):
        self.numbering = doc.part.numbering_part.element

    def restart(self, style):
        num_pr = style.element.find(qn("w:pPr") + "/" + qn("w:numPr"))
        if num_pr is None or num_pr.find(qn("w:numId")) is None:
            return None
        style_num_id = num_pr.find(qn("w:numId")).get(qn("w:val"))
        abstract_id = None
        for num in self.numbering.findall(qn("w:num")):
            if num.get(qn("w:numId")) == style_num_id:
                abstract_id = num.find(qn("w:abstractNumId")).get(qn("w:val"))
        if abstract_id is None:
            return None
        ids = [int(n.get(qn("w:numId"))) for n in self.numbering.findall(qn("w:num"))]
        new_id = str(max(ids, default=0) + 1)
        num = self.numbering.makeelement(qn("w:num"), {qn("w:numId"): new_id})
        abstract = num.makeelement(qn("w:abstractNumId"), {qn("w:val"): abstract_id})
        num.append(abstract)
        override = num.makeelement(qn("w:lvlOverride"), {qn("w:ilvl"): "0"})
        override.append(override.makeelement(qn("w:startOverride"), {qn("w:val"): "1"}))
        num.append(override)
        self.numbering.append(num)
        return new_id

    @staticmethod
    def apply(paragraph, num_id):
        p_pr = paragraph._p.get_or_add_pPr()
        num_pr = p_pr.get_or_add_numPr()
        num_pr.get_or_add_ilvl().val = 0
        num_pr.get_or_add_numId().val = int(num_id)


def _add_table(doc, block):
    ncols = len(block["header"])
    table = doc.add_table(rows=1, cols=ncols)
    table.style = doc.styles["Table Grid"]
    hdr = table.rows[0]
    _repeat_header(hdr)
    for cell, text in zip(hdr.cells, block["header"]):
        run = cell.paragraphs[0].add_run(text)
        run.bold = True
    for row in block["rows"]:
        cells = table.add_row().cells
        for cell, text in zip(cells, row):
            cell.text = text
    if block["caption"]:
        p = doc.add_paragraph(style="Caption")
        p.add_run(block["caption"])


def _repeat_header(row):
    tr_pr = row._tr.get_or_add_trPr()
    el = tr_pr.makeelement(qn("w:tblHeader"), {qn("w:val"): "true"})
    tr_pr.append(el)


def _add_image(doc, block):
    natural_cm = block["width_px"] / PX_PER_CM
    width_cm = min(block["width_cm"] or natural_cm, TEXT_WIDTH_CM)
    # Keep very tall images on one page (leave room for a caption).
    max_h_cm = PAGE_HEIGHT_CM - 2 * MARGIN_CM - 2
    if width_cm * block["height_px"] / block["width_px"] > max_h_cm:
        width_cm = max_h_cm * block["width_px"] / block["height_px"]
    doc.add_picture(io.BytesIO(block["data"]), width=Cm(width_cm))
    doc.paragraphs[-1].alignment = WD_ALIGN_PARAGRAPH.CENTER
    if block["caption"]:
        p = doc.add_paragraph(style="Caption")
        p.add_run(block["caption"])
        p.alignment = WD_ALIGN_PARAGRAPH.CENTER


